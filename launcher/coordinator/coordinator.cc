#include "launcher/coordinator/coordinator.h"

#include <fmt/format.h>

#include "common/hmac_auth.h"
#include "common/log.h"
#include "launcher/coordinator/assign_builder.h"

namespace ds {

using Clock = std::chrono::steady_clock;
using std::chrono::duration;
using std::chrono::milliseconds;

namespace {
milliseconds Ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000)); }
}  // namespace

// A connection until it authenticates; then an agent or store session.
struct Coordinator::Pending {
  enum class Stage { kHello, kAuth, kAgent, kStore };
  Pending(asio::io_context& io, std::shared_ptr<FrameConn> c) : conn(std::move(c)), timer(io) {}
  std::shared_ptr<FrameConn> conn;
  asio::steady_timer timer;
  Stage stage = Stage::kHello;
  msg::Hello hello;
  Bytes nonce;
  std::string key;
  int node = -1;  // agent session: node index after Register
  bool rejected = false;  // already logged why we close it
};


Coordinator::Coordinator(asio::io_context& io, const LaunchPlan& plan, CoordinatorOptions options,
                         JobRecord& record)
    : io_(io), plan_(plan), candidates_(Candidates(plan)), gen_plan_(plan), opt_(std::move(options)),
      record_(record), acceptor_(io), tick_timer_(io), store_service_(io, store_) {
  for (size_t i = 0; i < candidates_.size(); ++i) agents_.push_back(std::make_unique<Agent>());
  for (size_t i = 0; i < plan_.nodes.size(); ++i) gen_agents_.push_back(static_cast<int>(i));
  master_port_ = opt_.master_port;
}

Coordinator::~Coordinator() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  for (auto& a : agents_)
    if (a->conn) a->conn->Close("coordinator destroyed");
}

Status Coordinator::Listen() {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(opt_.listen_addr, ec);
  if (ec) return Status::InvalidArgument(fmt::format("listen address '{}': {}", opt_.listen_addr, ec.message()));
  asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(opt_.listen_port));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError(fmt::format("listen {}:{}: {}", opt_.listen_addr, opt_.listen_port, ec.message()));
  Accept();
  return Status::OK();
}

int Coordinator::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

std::string Coordinator::address() const {
  std::string host = opt_.advertise_host.empty() ? opt_.listen_addr : opt_.advertise_host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("{}:{}", host, port());
}

bool Coordinator::NodeRegistered(int node) const { return agents_.at(node)->registered; }

std::vector<int> Coordinator::LostNodes() const {
  std::vector<int> out;
  for (size_t i = 0; i < agents_.size(); ++i)
    if (agents_[i]->registered && agents_[i]->lost) out.push_back(static_cast<int>(i));
  return out;
}

int Coordinator::OpenAgentConnections() const {
  int n = 0;
  for (const auto& a : agents_) n += a->conn && !a->conn->closed();
  return n;
}

void Coordinator::Start() {
  start_time_ = Clock::now();
  Tick();
}

void Coordinator::Accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket sock) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      boost::system::error_code pec;
      auto rep = sock.remote_endpoint(pec);
      std::string peer = pec ? "?" : fmt::format("{}:{}", rep.address().to_string(), rep.port());
      auto p = std::make_shared<Pending>(io_, std::make_shared<FrameConn>(std::move(sock), peer));
      p->timer.expires_after(Ms(opt_.handshake_timeout));
      p->timer.async_wait([p](boost::system::error_code tec) {
        if (tec || p->stage == Pending::Stage::kAgent || p->stage == Pending::Stage::kStore) return;
        DS_LOG(Warn, Proto) << p->conn->peer() << ": no handshake within the timeout; closing";
        p->rejected = true;
        p->conn->Close("handshake timeout");
      });
      p->conn->Start([this, p](Frame f) { OnHandshakeFrame(p, std::move(f)); },
                     [this, p](const std::string& reason) {
                       p->timer.cancel();
                       if (p->stage == Pending::Stage::kAgent && p->node >= 0) {
                         OnAgentClosed(p->node, reason);
                       } else if (!p->rejected && reason != "connection closed by peer") {
                         DS_LOG(Warn, Proto) << p->conn->peer() << ": dropped: " << reason;
                       }
                     });
    }
    Accept();
  });
}

void Coordinator::OnHandshakeFrame(const std::shared_ptr<Pending>& p, Frame f) {
  auto reject = [&](wire::ErrorCode code, const std::string& why) {
    DS_LOG(Warn, Proto) << p->conn->peer() << ": " << why << "; closing";
    p->rejected = true;
    p->conn->Send(wire::MsgType::kError, msg::Error{static_cast<uint32_t>(code), why}.Encode());
    p->conn->Close(why, /*flush=*/true);
  };
  switch (p->stage) {
    case Pending::Stage::kHello: {
      if (f.type != wire::MsgType::kHello) return reject(wire::ErrorCode::kProtocol, "expected Hello first");
      auto h = msg::Hello::Decode(f.payload);
      if (!h.ok()) return reject(wire::ErrorCode::kProtocol, h.status().message());
      p->hello = *h;
      if (h->role == wire::Role::kAgent) {
        if (h->job_id != opt_.job_id) return reject(wire::ErrorCode::kAuth, "unknown job id '" + h->job_id + "'");
        p->key = opt_.secret;
      } else if (h->role == wire::Role::kStore) {
        p->key = StoreToken(opt_.secret, opt_.job_id, generation_);
      } else {
        return reject(wire::ErrorCode::kProtocol, "unknown role");
      }
      p->nonce = RandomBytes(wire::kNonceSize);
      p->stage = Pending::Stage::kAuth;
      p->conn->Send(wire::MsgType::kChallenge, msg::Challenge{p->nonce}.Encode());
      return;
    }
    case Pending::Stage::kAuth: {
      if (f.type != wire::MsgType::kAuth) return reject(wire::ErrorCode::kProtocol, "expected Auth");
      auto a = msg::Auth::Decode(f.payload);
      if (!a.ok()) return reject(wire::ErrorCode::kProtocol, a.status().message());
      if (!MacEquals(a->mac, ClientProof(p->key, p->nonce)))
        return reject(wire::ErrorCode::kAuth, "authentication failed (wrong secret or token)");
      p->stage = p->hello.role == wire::Role::kAgent ? Pending::Stage::kAgent : Pending::Stage::kStore;
      p->timer.cancel();
      p->conn->Send(wire::MsgType::kAuthOk, msg::AuthOk{ServerProof(p->key, p->nonce)}.Encode());
      return;
    }
    case Pending::Stage::kStore: {
      Status st = store_service_.Handle(p->conn, f);
      if (!st.ok()) reject(wire::ErrorCode::kProtocol, st.message());
      return;
    }
    case Pending::Stage::kAgent: {
      if (p->node < 0) {
        if (f.type != wire::MsgType::kRegister) return reject(wire::ErrorCode::kProtocol, "expected Register");
        auto r = msg::Register::Decode(f.payload);
        if (!r.ok()) return reject(wire::ErrorCode::kProtocol, r.status().message());
        if (r->node_index >= agents_.size())
          return reject(wire::ErrorCode::kInvalid, fmt::format("node index {} is not in the plan", r->node_index));
        Agent& a = *agents_[r->node_index];
        // A lost node may come back (elastic.rejoin): it idles until the next restart.
        const bool rejoin = a.registered && a.lost && state_ != CoordState::kDone && plan_.job.elastic.rejoin;
        if (!rejoin && (a.registered || state_ != CoordState::kWaitingForAgents))
          return reject(wire::ErrorCode::kInvalid, fmt::format("node {} is already registered", r->node_index));
        p->node = static_cast<int>(r->node_index);
        a.conn = p->conn;
        a.facts = *r;
        a.registered = true;
        a.lost = false;
        a.stopped = true;
        a.last_seen = a.last_ping = Clock::now();
        if (rejoin) {
          Notice(fmt::format("{} rejoined; it takes part from the next restart", candidates_[p->node].host.name));
          return;
        }
        DS_LOG(Info, Coord) << "node " << p->node << " registered after "
                            << std::chrono::duration<double, std::milli>(Clock::now() - start_time_).count()
                            << " ms (" << r->host << ", " << r->addr << " via "
                            << r->ifname << ", " << r->cpus << " cpus)";
        for (const auto& ag : agents_)
          if (!ag->registered) return;
        StartGeneration();
        return;
      }
      agents_[p->node]->last_seen = Clock::now();
      Status st = HandleAgentMessage(p->node, f);
      if (!st.ok()) reject(wire::ErrorCode::kProtocol, st.message());
      return;
    }
  }
}

}  // namespace ds
