#include "launcher/coordinator/status_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace ds {

struct StatusServer::Conn {
  explicit Conn(asio::io_context& io) : sock(io), timer(io) {}
  asio::local::stream_protocol::socket sock;
  asio::steady_timer timer;
  std::string reply;
};

StatusServer::StatusServer(asio::io_context& io, std::function<std::string()> render)
    : io_(io), render_(std::move(render)), loop_(io, kMaxConnections, [this](UniqueFd fd) { Answer(std::move(fd)); }) {}

StatusServer::~StatusServer() {
  *alive_ = false;
  if (loop_.listening()) {
    loop_.Stop();
    ::unlinkat(dir_.fd.get(), (name_ + ".sock").c_str(), 0);
  }
}

Status StatusServer::Listen(PrivateDir dir, const std::string& name) {
  dir_ = std::move(dir);
  name_ = name;
  const std::string path = socket_path();
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path))
    return Status::InvalidArgument(fmt::format("{}: longer than a Unix socket path may be ({} bytes); set "
                                               "XDG_RUNTIME_DIR to a shorter directory", path, sizeof(a.sun_path) - 1));
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  ::unlinkat(dir_.fd.get(), (name_ + ".sock").c_str(), 0);  // a stale one of a killed job with our pid
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd.get(), 64) != 0)
    return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  Status st = loop_.Start(std::move(fd));
  return st.ok() ? st : Status::IOError(fmt::format("{}: {}", path, st.message()));
}

// The view, written within kWriteTimeout (a client that does not read is cut off); nothing is read.
void StatusServer::Answer(UniqueFd fd) {
  auto c = std::make_shared<Conn>(io_);
  boost::system::error_code ec;
  c->sock.assign(asio::local::stream_protocol(), fd.get(), ec);
  if (ec) return loop_.Closed();  // fd closes with it
  fd.release();
  c->reply = render_();
  c->timer.expires_after(kWriteTimeout);
  c->timer.async_wait([c](boost::system::error_code e) {
    boost::system::error_code ignored;
    if (!e) c->sock.close(ignored);  // the write in flight fails: Closed
  });
  asio::async_write(c->sock, asio::buffer(c->reply), [this, c, alive = alive_](boost::system::error_code, size_t) {
    if (!*alive) return;
    boost::system::error_code ignored;
    c->timer.cancel();
    c->sock.close(ignored);
    loop_.Closed();
  });
}

Status StatusServer::Finish(const std::string& record) {
  Status st = WritePrivateFile(dir_, name_ + ".json", record);
  PruneRecords(dir_, kKeepRecords);
  *alive_ = false;
  alive_ = std::make_shared<bool>(true);
  loop_.Stop();
  ::unlinkat(dir_.fd.get(), (name_ + ".sock").c_str(), 0);
  return st;
}

void PruneRecords(const PrivateDir& dir, size_t keep) {
  const int fd = ::openat(dir.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (d == nullptr) {
    if (fd >= 0) ::close(fd);
    return;
  }
  std::vector<std::pair<timespec, std::string>> records;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    struct stat st{};
    if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0 &&
        ::fstatat(dir.fd.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      records.push_back({st.st_mtim, n});
  }
  ::closedir(d);
  if (records.size() <= keep) return;
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    return a.first.tv_sec != b.first.tv_sec ? a.first.tv_sec > b.first.tv_sec : a.first.tv_nsec > b.first.tv_nsec;
  });
  for (size_t i = keep; i < records.size(); ++i) ::unlinkat(dir.fd.get(), records[i].second.c_str(), 0);
}

Status WritePrivateFile(const PrivateDir& dir, const std::string& name, const std::string& text) {
  const std::string tmp = name + ".tmp";
  const int fd = ::openat(dir.fd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(fmt::format("{}/{}: {}", dir.path, tmp, std::strerror(errno)));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  ::close(fd);
  if (!written || ::renameat(dir.fd.get(), tmp.c_str(), dir.fd.get(), name.c_str()) != 0) {
    ::unlinkat(dir.fd.get(), tmp.c_str(), 0);
    return Status::IOError(fmt::format("{}/{}: {}", dir.path, name, std::strerror(written ? errno : err)));
  }
  return Status::OK();
}

}  // namespace ds
