#include "launcher/coordinator/coordinator.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {

// A connection until it authenticates; then an agent or store session.
struct Coordinator::Pending {
  enum class Stage { kHello, kAuth, kAgent, kStore, kAttach };
  Pending(asio::io_context& io, std::shared_ptr<FrameConn> c) : conn(std::move(c)), timer(io) {}
  std::shared_ptr<FrameConn> conn;
  asio::steady_timer timer;
  Stage stage = Stage::kHello;
  msg::Hello hello;
  Bytes nonce;
  std::string key;
  int node = -1;          // agent session: node index after Register
  bool rejected = false;  // already logged why we close it
  bool in_handshake = true;  // counted in unauthenticated_
};

namespace {

constexpr int kListenBacklog = 65535;
constexpr std::chrono::milliseconds kFirstAcceptBackoff{100};
constexpr std::chrono::milliseconds kMaxAcceptBackoff{1000};

// accept() failed for want of a resource that closing connections frees.
bool OutOfDescriptors(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system ||
         ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
}

// The rate-limit bucket of a refusal.
const char* ReasonOf(wire::ErrorCode code) {
  return code == wire::ErrorCode::kAuth ? "authentication" : "protocol";
}

}  // namespace

Coordinator::Coordinator(asio::io_context& io, const LaunchPlan& plan, CoordinatorOptions options,
                         JobRecord& record)
    : io_(io), opt_(options), acceptor_(io), accept_timer_(io), reject_log_(io, options.reject_log_interval),
      timer_(io), store_service_(io, store_), plan_nodes_(static_cast<int>(Candidates(plan).size())),
      control_(plan, std::move(options), record, store_, RealClock(), timer_) {
  control_.OnDone([this] { Finished(); });
  attach_keys_[wire::kAttachLeaderNode] = AttachKey(opt_.secret);
  if (!opt_.join_key.empty())
    join_order_.emplace(plan_nodes_, Seconds(opt_.join_lease));
}

Coordinator::~Coordinator() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_timer_.cancel();
}

Status Coordinator::Listen() {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(opt_.listen_addr, ec);
  if (ec) return Status::InvalidArgument(fmt::format("listen address '{}': {}", opt_.listen_addr, ec.message()));
  asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(opt_.listen_port));
  if (opt_.listen_fd >= 0) return Adopt(ep);
  // Close-on-exec from birth (Asio's open() would not make it so): no
  // program dslaunch starts, nor any it starts, can hold the port.
  const int fd = ::socket(ep.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) ec.assign(errno, boost::system::system_category());
  if (!ec) acceptor_.assign(ep.protocol(), fd, ec);
  if (ec && fd >= 0) ::close(fd);
  protocol_ = ep.protocol();
  if (!ec) acceptor_.non_blocking(true, ec);  // accept4 never waits: readiness comes from async_wait
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  // As long a queue as the kernel allows (net.core.somaxconn caps it; Asio's
  // default, SOMAXCONN, would cap a raised sysctl at 4,096): thousands of
  // agents arriving together wait there while 256 at a time authenticate.
  if (!ec) acceptor_.listen(kListenBacklog, ec);
  if (ec) return Status::IOError(fmt::format("listen {}:{}: {}", opt_.listen_addr, opt_.listen_port, ec.message()));
  Accept();
  return Status::OK();
}

// The join form's host bound and listens already (launcher/join/rendezvous_claim.h).
Status Coordinator::Adopt(const asio::ip::tcp::endpoint& ep) {
  boost::system::error_code ec;
  protocol_ = ep.protocol();
  acceptor_.assign(ep.protocol(), opt_.listen_fd, ec);
  if (ec) ::close(opt_.listen_fd);
  opt_.listen_fd = -1;
  if (!ec) acceptor_.non_blocking(true, ec);
  if (ec) return Status::IOError(fmt::format("listen {}:{}: {}", opt_.listen_addr, opt_.listen_port, ec.message()));
  Accept();
  return Status::OK();
}

int Coordinator::port() const {
  if (!acceptor_.is_open()) return opt_.listen_port;  // not listening yet: the one it will
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

std::string Coordinator::address() const {
  std::string host = opt_.advertise_host.empty() ? opt_.listen_addr : opt_.advertise_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("{}:{}", host, port());
}

void Coordinator::Finished() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_timer_.cancel();
  if (on_done_) asio::post(io_, on_done_);
}

// At most max_unauthenticated connections in the handshake: past that the
// next ones wait in the listen backlog (not refused: a thousand agents that
// start at once all get in, in turn) until one authenticates or is dropped.
void Coordinator::Accept() {
  if (unauthenticated_ >= opt_.max_unauthenticated) {
    if (!accept_paused_) ++accept_pauses_;
    accept_paused_ = true;
    return;
  }
  accept_paused_ = false;
  // Readiness from Asio, the accept itself accept4(SOCK_CLOEXEC) (Asio's
  // accept() leaves the new socket inheritable until it is too late).
  acceptor_.async_wait(asio::socket_base::wait_read, [this](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) return OnAcceptError(ec);
    const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Accept();  // gone meanwhile
    if (fd < 0) return OnAcceptError(boost::system::error_code(errno, boost::system::system_category()));
    asio::ip::tcp::socket sock(io_);
    sock.assign(protocol_, fd, ec);
    if (ec) {
      ::close(fd);
      return OnAcceptError(ec);
    }
    accept_backoff_ = std::chrono::milliseconds(0);
    OnAccepted(std::move(sock));
    Accept();
  });
}

// Out of descriptors: the pending connection stays in the backlog and the
// listener stays readable, so retrying at once would spin a core. Wait.
void Coordinator::OnAcceptError(const boost::system::error_code& ec) {
  if (!OutOfDescriptors(ec)) {
    DS_LOG(Debug, Proto) << "accept: " << ec.message();
    return Accept();  // e.g. ECONNABORTED: that connection is gone, the next may not be
  }
  ++accept_backoffs_;
  if (accept_backoff_.count() == 0) {
    accept_backoff_ = kFirstAcceptBackoff;
    DS_LOG(Warn, Proto) << "accept: " << ec.message() << "; retrying every " << kFirstAcceptBackoff.count()
                        << " ms to " << kMaxAcceptBackoff.count() << " ms until descriptors are free";
  } else {
    accept_backoff_ = std::min(accept_backoff_ * 2, kMaxAcceptBackoff);
  }
  accept_timer_.expires_after(accept_backoff_);
  accept_timer_.async_wait([this](boost::system::error_code tec) {
    if (tec || !acceptor_.is_open()) return;
    Accept();
  });
}

void Coordinator::OnAccepted(asio::ip::tcp::socket sock) {
  boost::system::error_code pec;
  auto rep = sock.remote_endpoint(pec);
  std::string peer = pec ? "?" : fmt::format("{}:{}", rep.address().to_string(), rep.port());
  ++unauthenticated_;
  auto p = std::make_shared<Pending>(io_, std::make_shared<FrameConn>(std::move(sock), peer));
  p->conn->set_max_payload(wire::kMaxHandshakePayload);
  p->timer.expires_after(Seconds(opt_.handshake_timeout));
  p->timer.async_wait([this, p](boost::system::error_code tec) {
    if (tec || !p->in_handshake) return;
    Drop(p, "handshake timeout", p->conn->peer() + ": no handshake within the timeout; closing");
  });
  p->conn->Start([this, p](Frame f) { OnHandshakeFrame(p, std::move(f)); },
                 [this, p](const std::string& reason) {
                   p->timer.cancel();
                   LeaveHandshake(*p);
                   if (p->stage == Pending::Stage::kAgent && p->node >= 0) {
                     control_.OnAgentClosed(p->node, reason);
                   } else if (!p->rejected && reason != "connection closed by peer") {
                     reject_log_.Report("dropped", p->conn->peer() + ": dropped: " + Printable(reason));
                   }
                 });
}

void Coordinator::LeaveHandshake(Pending& p) {
  if (!p.in_handshake) return;
  p.in_handshake = false;
  --unauthenticated_;
  if (accept_paused_ && acceptor_.is_open()) Accept();
}

void Coordinator::Drop(const std::shared_ptr<Pending>& p, const std::string& reason, const std::string& why) {
  reject_log_.Report(reason, why);
  p->rejected = true;
  p->conn->Close(reason);
}

void Coordinator::Reject(const std::shared_ptr<Pending>& p, wire::ErrorCode code, const std::string& why) {
  std::string safe = Printable(why);
  reject_log_.Report(ReasonOf(code), p->conn->peer() + ": " + safe + "; closing");
  p->rejected = true;
  p->conn->Send(wire::MsgType::kError, msg::Error{static_cast<uint32_t>(code), safe}.Encode());
  p->conn->Close(safe, /*flush=*/true);
}

void Coordinator::OnHandshakeFrame(const std::shared_ptr<Pending>& p, Frame f) {
  switch (p->stage) {
    case Pending::Stage::kHello:
      return OnHello(p, f);
    case Pending::Stage::kAuth:
      return OnAuth(p, f);
    case Pending::Stage::kAgent:
      return OnAgentFrame(p, f);
    case Pending::Stage::kAttach:
      return Reject(p, wire::ErrorCode::kProtocol, "an attach client sends nothing after Auth");
    case Pending::Stage::kStore:
      if (Status st = store_service_.Handle(p->conn, f); !st.ok()) Reject(p, wire::ErrorCode::kProtocol, st.message());
      return;
  }
}

void Coordinator::OnHello(const std::shared_ptr<Pending>& p, const Frame& f) {
  if (f.type != wire::MsgType::kHello) return Reject(p, wire::ErrorCode::kProtocol, "expected Hello first");
  auto h = msg::Hello::Decode(f.payload);
  if (!h.ok()) return Reject(p, wire::ErrorCode::kProtocol, h.status().message());
  p->hello = *h;
  if (h->role == wire::Role::kJoin) {
    if (!join_order_)
      return Reject(p, wire::ErrorCode::kInvalid,
                    "this job gives no node ranks at join: its nodes have fixed ranks (--node_rank)");
    if (h->job_id != opt_.job_id) return Reject(p, wire::ErrorCode::kAuth, "unknown job id '" + h->job_id + "'");
    p->key = opt_.join_key;
  } else if (h->role == wire::Role::kAgent) {
    if (h->job_id != opt_.job_id) return Reject(p, wire::ErrorCode::kAuth, "unknown job id '" + h->job_id + "'");
    // Refused before the handshake ends: an agent looking for a leader
    // keeps what it holds for one (OnRegister refuses too, for the record).
    if (!control_.Commanding())
      return Reject(p, wire::ErrorCode::kInvalid, "this coordinator does not lead the job now (its etcd lease is lost)");
    auto token = agent_tokens_.find(static_cast<int>(h->node_index));
    if (token == agent_tokens_.end() && control_.NodeAlive(h->node_index))
      return Reject(p, wire::ErrorCode::kInvalid,
                    fmt::format("node {} already joined this job (is its node rank given to two nodes?)",
                                h->node_index));
    if (token == agent_tokens_.end())
      return Reject(p, wire::ErrorCode::kAuth, fmt::format("no agent token for node {}", h->node_index));
    p->key = token->second;
  } else if (h->role == wire::Role::kStore) {
    p->key = StoreToken(opt_.secret, opt_.job_id, control_.generation());
  } else if (h->role == wire::Role::kAttach) {
    if (!on_attach_) return Reject(p, wire::ErrorCode::kInvalid, "this coordinator serves no attach clients");
    if (h->job_id != opt_.job_id) return Reject(p, wire::ErrorCode::kAuth, "unknown job id '" + h->job_id + "'");
    auto key = attach_keys_.find(h->node_index);
    if (key == attach_keys_.end())
      return Reject(p, wire::ErrorCode::kAuth, fmt::format("no attach key for node {}", h->node_index));
    p->key = key->second;
  } else {
    return Reject(p, wire::ErrorCode::kProtocol, "unknown role");
  }
  p->nonce = RandomBytes(wire::kNonceSize);
  p->stage = Pending::Stage::kAuth;
  p->conn->Send(wire::MsgType::kChallenge, msg::Challenge{p->nonce}.Encode());
}

void Coordinator::OnAuth(const std::shared_ptr<Pending>& p, const Frame& f) {
  if (f.type != wire::MsgType::kAuth) return Reject(p, wire::ErrorCode::kProtocol, "expected Auth");
  auto a = msg::Auth::Decode(f.payload);
  if (!a.ok()) return Reject(p, wire::ErrorCode::kProtocol, a.status().message());
  if (!MacEquals(a->mac, ClientProof(p->key, p->nonce)))
    return Reject(p, wire::ErrorCode::kAuth, "authentication failed (wrong secret or token)");
  p->timer.cancel();
  LeaveHandshake(*p);
  p->conn->Send(wire::MsgType::kAuthOk, msg::AuthOk{ServerProof(p->key, p->nonce)}.Encode());
  if (p->hello.role == wire::Role::kJoin) return OnJoin(p);
  if (p->hello.role == wire::Role::kAttach) {
    p->stage = Pending::Stage::kAttach;  // frames stay handshake-sized: it has nothing to send
    p->rejected = true;                  // its close is its own business, not a drop
    return on_attach_(p->conn);
  }
  p->stage = p->hello.role == wire::Role::kAgent ? Pending::Stage::kAgent : Pending::Stage::kStore;
  p->conn->set_max_payload(wire::kMaxPayload);
}

// An authenticated joiner: its node rank (JoinOrder), then the connection
// ends; its agent registers as that node with that node's own key.
void Coordinator::OnJoin(const std::shared_ptr<Pending>& p) {
  auto rank = join_order_->Admit(RealClock().Now(), [this](int node) { return control_.NodeAlive(node); });
  if (!rank.ok())  // kTimeout: ask again (a lease may end); kInvalid: the job is full
    return Reject(p,
                  rank.status().code() == Status::Code::kUnavailable ? wire::ErrorCode::kTimeout
                                                                     : wire::ErrorCode::kInvalid,
                  rank.status().message());
  DS_LOG(Info, Coord) << Printable(p->hello.name) << " (" << p->conn->peer() << ") joined as node " << *rank;
  p->rejected = true;  // its close is expected, not a drop
  p->conn->Send(wire::MsgType::kJoined,
                msg::Joined{static_cast<uint32_t>(*rank), static_cast<uint32_t>(plan_nodes_)}.Encode());
  p->conn->Close("joined", /*flush=*/true);
}

// An authenticated agent: its first frame is Register, then JobControl's.
void Coordinator::OnAgentFrame(const std::shared_ptr<Pending>& p, const Frame& f) {
  if (p->node >= 0) {
    if (Status st = control_.OnAgentFrame(p->node, f); !st.ok())
      Reject(p, wire::ErrorCode::kProtocol, st.message());
    return;
  }
  if (f.type != wire::MsgType::kRegister) return Reject(p, wire::ErrorCode::kProtocol, "expected Register");
  auto r = msg::Register::Decode(f.payload);
  if (!r.ok()) return Reject(p, wire::ErrorCode::kProtocol, r.status().message());
  if (r->node_index != p->hello.node_index)
    return Reject(p, wire::ErrorCode::kProtocol,
                  fmt::format("Register for node {} after a Hello for node {}", r->node_index, p->hello.node_index));
  if (Status st = control_.OnRegister(*r, p->conn); !st.ok()) return Reject(p, wire::ErrorCode::kInvalid, st.message());
  p->node = static_cast<int>(r->node_index);
  // Spent: the token registered its node once and opens nothing any more.
  auto token = agent_tokens_.find(p->node);
  if (token != agent_tokens_.end() && token->second == p->key) agent_tokens_.erase(token);
}

std::string Coordinator::EnrollAgent(int node, std::string token) {
  if (token.empty()) token = RandomHex(32);
  agent_tokens_[node] = token;
  attach_keys_[static_cast<uint32_t>(node)] = AttachKey(token);
  return token;
}

}  // namespace ds
