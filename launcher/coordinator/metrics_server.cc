#include "launcher/coordinator/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ds {

struct MetricsServer::Conn {
  explicit Conn(asio::io_context& io) : sock(io), timer(io) {}
  asio::ip::tcp::socket sock;
  asio::steady_timer timer;
  std::string head;            // what arrived so far
  std::string reply;           // being written
  bool headed = false;         // being answered (its head arrived, or was too long)
  bool evicted = false;        // closed by CloseOldestIdle; its Done is on its way
  std::list<std::shared_ptr<Conn>>::iterator at;  // in conns_
  char buf[1024];
};

MetricsServer::MetricsServer(asio::io_context& io, MetricsServerOptions options, std::function<std::string()> render)
    : io_(io), opt_(std::move(options)), render_(std::move(render)),
      loop_(io, opt_.max_connections, [this](UniqueFd fd) { Serve(std::move(fd)); },
            [this] { return CloseOldestIdle(); }) {}

MetricsServer::~MetricsServer() { Close(); }

Status MetricsServer::Listen() {
  const std::string where = fmt::format("--metrics-port {} on {}", opt_.port, opt_.addr);
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(opt_.addr, ec);
  if (ec) return Status::InvalidArgument(fmt::format("--metrics-addr '{}': expected a numeric address ({})",
                                                     opt_.addr, ec.message()));
  asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(opt_.port));
  protocol_ = ep.protocol();
  UniqueFd fd(::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  if (fd.get() < 0 || ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      ::bind(fd.get(), ep.data(), static_cast<socklen_t>(ep.size())) != 0 || ::listen(fd.get(), 64) != 0) {
    // An address this host does not have, a port taken or not ours to bind:
    // what the user asked for is wrong (exit 2), said as such.
    const int err = errno;
    const std::string why = fmt::format("{}: {}", where, std::strerror(err));
    return err == EADDRNOTAVAIL || err == EADDRINUSE || err == EACCES ? Status::InvalidArgument(why)
                                                                       : Status::IOError(why);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0)
    return Status::IOError(fmt::format("{}: {}", where, std::strerror(errno)));
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Status st = loop_.Start(std::move(fd));
  return st.ok() ? st : Status::IOError(fmt::format("{}: {}", where, st.message()));
}

void MetricsServer::Close() {
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  loop_.Stop();
  for (const auto& c : conns_) {
    boost::system::error_code ignored;
    c->timer.cancel();
    c->sock.close(ignored);
  }
  conns_.clear();
}

bool MetricsServer::CloseOldestIdle() {
  for (const auto& c : conns_) {
    if (c->headed || c->evicted) continue;
    c->evicted = true;
    boost::system::error_code ignored;
    c->sock.close(ignored);  // its read ends with an error: Done
    return true;
  }
  return false;
}

// A connection accepted (accept_loop.h): its whole request within
// request_timeout (a slowloris is closed then).
void MetricsServer::Serve(UniqueFd fd) {
  auto c = std::make_shared<Conn>(io_);
  boost::system::error_code ec;
  c->sock.assign(protocol_, fd.get(), ec);
  if (ec) return loop_.Closed();  // fd closes with it
  fd.release();
  c->at = conns_.insert(conns_.end(), c);
  c->timer.expires_after(opt_.request_timeout);
  c->timer.async_wait([c](boost::system::error_code e) {
    if (e) return;
    boost::system::error_code ignored;
    c->sock.close(ignored);  // the read (or write) in flight ends with an error: Done
  });
  Read(c);
}

void MetricsServer::Read(const std::shared_ptr<Conn>& c) {
  c->sock.async_read_some(asio::buffer(c->buf), [this, c, alive = alive_](boost::system::error_code ec, size_t n) {
    if (!*alive) return;
    if (ec) return Done(c);
    c->head.append(c->buf, n);
    if (c->head.size() > kMaxRequestBytes)
      return Reply(c, "431 Request Header Fields Too Large",
                   fmt::format("request head over {} bytes\n", kMaxRequestBytes));
    if (c->head.find("\r\n\r\n") != std::string::npos || c->head.find("\n\n") != std::string::npos)
      return Answer(c);
    Read(c);
  });
}

// The request line only: "METHOD PATH VERSION"; headers are ignored.
void MetricsServer::Answer(const std::shared_ptr<Conn>& c) {
  const std::string line = c->head.substr(0, c->head.find('\n'));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return Reply(c, "400 Bad Request", "expected 'GET /metrics HTTP/1.1'\n");
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") return Reply(c, "405 Method Not Allowed", "only GET\n");
  if (path != "/metrics") return Reply(c, "404 Not Found", "dslaunch serves /metrics only\n");
  ++scrapes_;
  Reply(c, "200 OK", method == "HEAD" ? "" : render_(), "text/plain; version=0.0.4; charset=utf-8");
}

void MetricsServer::Reply(const std::shared_ptr<Conn>& c, const std::string& status, const std::string& body,
                          const std::string& type) {
  c->headed = true;
  c->reply = fmt::format("HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                         status, type, body.size(), body);
  asio::async_write(c->sock, asio::buffer(c->reply), [this, c, alive = alive_](boost::system::error_code, size_t) {
    if (!*alive) return;
    boost::system::error_code ignored;
    c->sock.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    Done(c);
  });
}

void MetricsServer::Done(const std::shared_ptr<Conn>& c) {
  boost::system::error_code ignored;
  c->timer.cancel();
  c->sock.close(ignored);
  conns_.erase(c->at);
  loop_.Closed();
}

}  // namespace ds
