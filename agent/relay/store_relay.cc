#include "agent/relay/store_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "agent/relay/relay_link.h"
#include "common/log.h"
#include "common/netif.h"

namespace ds {
namespace {

using Clock = std::chrono::steady_clock;

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
    return fmt::format("[{}]:{}", host, port);
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
  return fmt::format("{}:{}", host, ntohs(a->sin_port));
}

void NoDelay(int fd) {  // the store's requests are small writes: no Nagle wait in the middle
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

// The relay's thread: one poll() over the wake-up fd, the listener and every
// link's two sockets; it sleeps until an event, the next try of the upstream
// or the earliest waiting client's deadline.
class StoreRelay::Loop {
 public:
  Loop(UniqueFd listener, const StoreRelayOptions& o) : listener_(std::move(listener)), opt_(o) {}
  void Run(int wake_fd);
  Counts counts() const {
    return {accepted_.load(), connected_.load(), refused_.load(), expired_.load(), open_.load(), waiting_.load(),
            held_.load()};
  }

 private:
  struct Link {
    Link(UniqueFd c, size_t bytes, Clock::time_point deadline)
        : client(std::move(c)), state(bytes, deadline), peer(PeerName(client.get())) {}
    UniqueFd client;
    UniqueFd upstream;  // set while a connect is in flight and after it succeeded
    RelayLink state;
    std::string peer;
  };

  void Accept();
  void Dial(Link& l, Clock::time_point now);
  void DialWaiting(Clock::time_point now);
  void OnDialResult(Link& l, int err, Clock::time_point now);
  void Pump(Link& l, short client_revents, short upstream_revents);
  void Read(int fd, RelayDirection& d, RelayLink& s, const char* side, size_t limit);
  void CountWaiting();  // waiting_ and held_, from the links
  void Write(int fd, RelayDirection& d, RelayLink& s, const char* side);
  void Close(std::list<Link>::iterator it);
  int TimeoutMs(Clock::time_point now) const;

  UniqueFd listener_;
  StoreRelayOptions opt_;
  std::list<Link> links_;
  bool accept_paused_ = false;  // out of descriptors: resumes when a link closes
  bool upstream_up_ = false;    // the last try connected: the waiting dial at once
  size_t host_ = 0;             // the upstream host tried next (opt_.upstream_hosts)
  std::string Upstream() const { return fmt::format("{}:{}", opt_.upstream_hosts[host_], opt_.upstream_port); }
  Clock::time_point next_try_{};
  std::atomic<uint64_t> accepted_{0}, connected_{0}, refused_{0}, expired_{0}, open_{0}, waiting_{0}, held_{0};
};

void StoreRelay::Loop::Run(int wake_fd) {
  std::vector<pollfd> fds;
  std::vector<std::list<Link>::iterator> owners;  // fds[2 + 2k], fds[3 + 2k] belong to owners[k]
  while (true) {
    CountWaiting();
    const bool full = waiting_ >= opt_.max_waiting, over_budget = held_ >= opt_.held_budget;
    fds.assign({{wake_fd, POLLIN, 0}, {accept_paused_ || full ? -1 : listener_.get(), POLLIN, 0}});
    owners.clear();
    for (auto it = links_.begin(); it != links_.end(); ++it) {
      // A socket with nothing to do now is left out (fd -1): its hang-up or
      // error would wake every poll; a later read or write meets it instead.
      // Past the budget, clients not connected through are not read.
      short cev = it->state.ClientEvents();
      if (over_budget && !it->state.connected()) cev &= static_cast<short>(~POLLIN);
      const short uev = it->state.UpstreamEvents();
      fds.push_back({cev != 0 ? it->client.get() : -1, cev, 0});
      fds.push_back({uev != 0 ? it->upstream.get() : -1, uev, 0});  // -1 too while there is none
      owners.push_back(it);
    }
    int r = ::poll(fds.data(), fds.size(), TimeoutMs(Clock::now()));
    if (r < 0 && errno != EINTR) {
      DS_LOG(Warn, Agent) << "store relay: poll: " << std::strerror(errno) << "; the relay stops";
      return;
    }
    if (fds[0].revents != 0) return;  // stopped
    if (fds[1].revents != 0) Accept();
    for (size_t k = 0; k < owners.size(); ++k) {
      Link& l = *owners[k];
      const short crev = fds[2 + 2 * k].revents, urev = fds[3 + 2 * k].revents;
      if (l.upstream.get() >= 0 && !l.state.connected() && urev != 0) {
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(l.upstream.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        OnDialResult(l, err, Clock::now());
      }
      Pump(l, crev, urev);
    }
    const auto now = Clock::now();
    DialWaiting(now);
    for (auto it = links_.begin(); it != links_.end();) {
      if (it->state.Expire(now)) {
        ++expired_;
        std::vector<std::string> where;
        for (const std::string& h : opt_.upstream_hosts) where.push_back(fmt::format("{}:{}", h, opt_.upstream_port));
        DS_LOG(Warn, Agent) << "store relay: rank 0's store (" << fmt::format("{}", fmt::join(where, " or "))
                            << ") did not listen within " << opt_.wait_limit.count() / 1000.0
                            << " s; closed the connection from " << it->peer;
      }
      auto next = std::next(it);
      if (it->state.finished()) Close(it);
      it = next;
    }
  }
}

void StoreRelay::Loop::CountWaiting() {
  uint64_t waiting = 0, held = 0;
  for (const Link& l : links_)
    if (!l.state.connected()) ++waiting, held += l.state.up().buffered();
  waiting_ = waiting;
  held_ = held;
}

void StoreRelay::Loop::Accept() {
  while (waiting_ < opt_.max_waiting) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        DS_LOG(Warn, Agent) << "store relay: accept: " << std::strerror(errno)
                            << "; new clients wait until a connection closes";
        accept_paused_ = true;
      }
      return;  // EAGAIN, or a client that left before we took it
    }
    NoDelay(fd);
    links_.emplace_back(UniqueFd(fd), opt_.buffer_bytes, Clock::now() + opt_.wait_limit);
    ++accepted_;
    ++open_;
    ++waiting_;
    DS_LOG(Debug, Agent) << "store relay: accepted " << links_.back().peer;
  }
}

// Waiting clients try the upstream: while it is not known to listen, one try
// every retry_step for all of them; once one connects, the rest at once.
void StoreRelay::Loop::DialWaiting(Clock::time_point now) {
  for (Link& l : links_) {
    if (l.state.connected() || l.state.finished()) continue;
    if (l.upstream.get() >= 0) {  // a try in flight
      if (!upstream_up_) return;
      continue;
    }
    if (!upstream_up_ && now < next_try_) return;
    Dial(l, now);
    if (!upstream_up_) return;
  }
}

void StoreRelay::Loop::Dial(Link& l, Clock::time_point now) {
  l.upstream = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (l.upstream.get() < 0) return l.state.Fail(fmt::format("socket: {}", std::strerror(errno)));
  NoDelay(l.upstream.get());
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(opt_.upstream_port));
  if (::inet_pton(AF_INET, opt_.upstream_hosts[host_].c_str(), &to.sin_addr) != 1)
    return l.state.Fail("not an IPv4 address: " + opt_.upstream_hosts[host_]);
  int rc = ::connect(l.upstream.get(), reinterpret_cast<sockaddr*>(&to), sizeof(to));
  if (rc != 0 && errno == EINPROGRESS) return;  // completes as POLLOUT
  OnDialResult(l, rc == 0 ? 0 : errno, now);
}

void StoreRelay::Loop::OnDialResult(Link& l, int err, Clock::time_point now) {
  if (err == 0 && !upstream_up_) {
    // Rank 0's port was free between its hold and rank 0's bind: whoever
    // listens there now must be this user (rank 0 runs as the agent does),
    // never another local user who took the port to play the store.
    std::vector<uint32_t> owners = ListenerOwners(opt_.upstream_port);
    const uint32_t me = static_cast<uint32_t>(::geteuid());
    if (owners.empty()) {  // it accepted us and stopped listening (a one-shot server): who accepted?
      sockaddr_in mine{};
      socklen_t len = sizeof(mine);
      if (::getsockname(l.upstream.get(), reinterpret_cast<sockaddr*>(&mine), &len) == 0)
        if (auto owner = AcceptedOwner(ntohs(mine.sin_port), opt_.upstream_port)) owners.push_back(*owner);
    }
    auto other = std::find_if(owners.begin(), owners.end(), [me](uint32_t u) { return u != me; });
    if (owners.empty() || other != owners.end()) {
      l.upstream.Reset();
      l.state.Fail(fmt::format("{} is listened on by uid {}, not by rank 0 (uid {}): not relaying to it", Upstream(),
                               other == owners.end() ? std::string("?") : std::to_string(*other),
                               me));
      DS_LOG(Warn, Agent) << "store relay: " << l.state.failure() << "; closed the connection from " << l.peer;
      return;
    }
  }
  if (err == 0) {
    l.state.Connected();
    upstream_up_ = true;
    ++connected_;
    DS_LOG(Debug, Agent) << "store relay: " << l.peer << " connected through to " << Upstream();
    return;
  }
  l.upstream.Reset();
  if (err == ECONNREFUSED) {  // not listening yet (or any more): try again in a step
    ++refused_;
    upstream_up_ = false;
    host_ = (host_ + 1) % opt_.upstream_hosts.size();  // the next place rank 0 may listen
    next_try_ = now + opt_.retry_step;
    return;
  }
  l.state.Fail(fmt::format("connect {}: {}", Upstream(), std::strerror(err)));
}

void StoreRelay::Loop::Pump(Link& l, short crev, short urev) {
  RelayLink& s = l.state;
  // A client not connected through reads only into what is left of the budget.
  const size_t limit = s.connected() ? SIZE_MAX : opt_.held_budget - std::min<uint64_t>(held_, opt_.held_budget);
  if (crev != 0 && s.up().WantsRead() && limit > 0) {
    const size_t before = s.up().buffered();
    Read(l.client.get(), s.up(), s, "client", limit);
    if (!s.connected()) held_ += s.up().buffered() - std::min(before, s.up().buffered());
  }
  if (s.connected() && urev != 0 && s.down().WantsRead()) Read(l.upstream.get(), s.down(), s, "store", SIZE_MAX);
  if (s.connected()) Write(l.upstream.get(), s.up(), s, "store");
  Write(l.client.get(), s.down(), s, "client");
}

void StoreRelay::Loop::Read(int fd, RelayDirection& d, RelayLink& s, const char* side, size_t limit) {
  while (d.WantsRead() && !s.finished() && limit > 0) {
    std::span<uint8_t> space = d.ReadSpace();
    ssize_t n = ::recv(fd, space.data(), std::min(space.size(), limit), MSG_DONTWAIT);
    if (n > 0) d.Filled(static_cast<size_t>(n)), limit -= static_cast<size_t>(n);
    else if (n == 0) d.SourceEnded();
    else if (errno == EINTR) continue;
    else if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    else s.Fail(fmt::format("read from the {}: {}", side, std::strerror(errno)));
  }
}

void StoreRelay::Loop::Write(int fd, RelayDirection& d, RelayLink& s, const char* side) {
  while (d.WantsWrite() && !s.finished()) {
    std::span<const uint8_t> pending = d.Pending();
    ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) d.Written(static_cast<size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    else return s.Fail(fmt::format("write to the {}: {}", side, std::strerror(errno)));
  }
  if (d.ShutSinkNow() && !s.finished()) {
    ::shutdown(fd, SHUT_WR);
    d.SinkShut();
  }
}

void StoreRelay::Loop::Close(std::list<Link>::iterator it) {
  if (!it->state.failure().empty())
    DS_LOG(Debug, Agent) << "store relay: closed " << it->peer << ": " << it->state.failure();
  links_.erase(it);  // both sockets close
  --open_;
  accept_paused_ = false;
}

int StoreRelay::Loop::TimeoutMs(Clock::time_point now) const {
  std::optional<Clock::time_point> wake;
  for (const Link& l : links_) {
    if (l.state.connected()) continue;
    wake = wake ? std::min(*wake, l.state.deadline()) : l.state.deadline();
    if (l.upstream.get() < 0 && !upstream_up_) wake = std::min(*wake, next_try_);
  }
  if (!wake) return -1;
  if (*wake <= now) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*wake - now).count());
}

Result<std::unique_ptr<StoreRelay>> StoreRelay::Start(UniqueFd listener, const StoreRelayOptions& options) {
  std::unique_ptr<StoreRelay> relay(new StoreRelay());
  relay->wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (relay->wake_.get() < 0) return Status::IOError(fmt::format("store relay: eventfd: {}", std::strerror(errno)));
  ::listen(listener.get(), SOMAXCONN);  // every rank may connect at once
  StoreRelayOptions o = options;
  if (o.upstream_hosts.empty()) o.upstream_hosts = {"127.0.0.1"};
  relay->loop_ = std::make_unique<Loop>(std::move(listener), o);
  relay->thread_ = std::thread([loop = relay->loop_.get(), wake = relay->wake_.get()] {
    try {
      loop->Run(wake);
    } catch (const std::exception& e) {
      DS_LOG(Warn, Agent) << "store relay: " << e.what() << "; the relay stops";
    } catch (...) {
      DS_LOG(Warn, Agent) << "store relay: unknown exception; the relay stops";
    }
  });
  return relay;
}

StoreRelay::~StoreRelay() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof(one));
    thread_.join();
  }
}

StoreRelay::Counts StoreRelay::counts() const { return loop_ ? loop_->counts() : Counts{}; }

}  // namespace ds
