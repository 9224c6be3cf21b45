// MetricsServer: `--metrics-port`'s HTTP endpoint on the coordinator's
// io_context: GET /metrics answers the body `render()` returns (Prometheus'
// text exposition, launcher/report/metrics_text.h) and closes; anything else
// is 404 (another path) or 405 (another method). HTTP/1.0-style, one request
// per connection, no keep-alive.
// It never blocks the io thread and holds a peer to a small budget: a request
// head of at most kMaxRequestBytes (more: 431 and close), the whole request
// within options.request_timeout (a slowloris is closed then), and at most
// options.max_connections open at once: a connection arriving at the limit
// closes the oldest one that has not sent a whole request head, so idle
// connections, however many, never keep a scrape out (accept_loop.h). Sockets are close-on-exec from birth (socket/accept4), as the
// coordinator's. It binds loopback unless told another address: what it
// shows (hosts, ranks, steps) is the job's, served without authentication.
// Not thread-safe: the io thread only (or before run()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "launcher/coordinator/accept_loop.h"

namespace ds {

struct MetricsServerOptions {
  std::string addr = "127.0.0.1";     // numeric address to listen on (--metrics-addr)
  int port = 0;                       // 0 = any free port (tests); --metrics-port
  std::chrono::milliseconds request_timeout{2000};  // the request head, and then the answer, within this
  int max_connections = 16;           // open at once; past it the oldest without a whole head is closed
};

class MetricsServer {
 public:
  static constexpr size_t kMaxRequestBytes = 8192;

  // `render` is called on the io thread for each GET /metrics.
  MetricsServer(asio::io_context& io, MetricsServerOptions options, std::function<std::string()> render);
  ~MetricsServer();

  // Binds and listens. Error: "--metrics-port 9100 on 127.0.0.1: Address already in use".
  Status Listen();
  int port() const { return port_; }
  // Stops accepting and closes every connection (the job is over).
  void Close();
  // Requests answered 200 so far.
  uint64_t scrapes() const { return scrapes_; }

 private:
  struct Conn;
  void Serve(UniqueFd fd);
  void Read(const std::shared_ptr<Conn>& c);
  void Answer(const std::shared_ptr<Conn>& c);
  void Reply(const std::shared_ptr<Conn>& c, const std::string& status, const std::string& body,
             const std::string& type = "text/plain; charset=utf-8");
  void Done(const std::shared_ptr<Conn>& c);
  // AcceptLoop's make_room: closes the oldest connection still sending its head.
  bool CloseOldestIdle();

  asio::io_context& io_;
  MetricsServerOptions opt_;
  std::function<std::string()> render_;
  asio::ip::tcp protocol_ = asio::ip::tcp::v4();
  int port_ = 0;
  uint64_t scrapes_ = 0;
  std::list<std::shared_ptr<Conn>> conns_;  // open, oldest first
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // handlers check it after Close/destruction
  AcceptLoop loop_;  // last: destroyed first, while what on_accept uses lives
};

}  // namespace ds
