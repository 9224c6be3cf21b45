#include "sim/sim_fleet.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/strings.h"
#include "sim/sim_store.h"
#include "wire/client_conn.h"

namespace ds::sim {
namespace {

constexpr auto kTick = std::chrono::milliseconds(20);  // heartbeats go out in slices of the interval
constexpr size_t kMaxErrors = 8;
constexpr int kMaxAttempts = 30;  // connects per agent before it gives up (dsagent: --join-timeout)
constexpr int kPerSourceAddress = 25000;  // connections per loopback source address (ephemeral ports)

// Loopback source address number i / kPerSourceAddress of a group: agents
// connect from 127.0.k.2, store clients from 127.0.k.3, so neither runs out
// of the ~28K ephemeral ports one address has.
asio::ip::address SourceAddress(int i, int group) {
  return asio::ip::make_address_v4(fmt::format("127.0.{}.{}", i / kPerSourceAddress, 2 + group));
}

std::string EnvValue(const KeyValues& env, const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  return "";
}

}  // namespace

struct SimFleet::Agent {
  int node = 0;
  std::shared_ptr<SimConn> conn;
  bool ready = false;
  bool silent = false;    // Silence(): sends and answers nothing
  bool killed = false;    // Kill() or Silence(): its end is expected
  bool shut_down = false;
  int generation = -1;    // of its current workers
  std::vector<int> ranks;
  int world = 0;
  std::string store_token;
  asio::ip::tcp::endpoint store;
  SimTime last_sent{};
  int attempts = 0;       // connects tried
};

SimFleet::SimFleet(asio::io_context& io, FleetConfig config) : io_(io), config_(std::move(config)), tick_(io) {
  for (int i = 0; i < config_.agents; ++i) {
    agents_.push_back(std::make_unique<Agent>());
    agents_.back()->node = i;
  }
  ticks_per_interval_ = std::max<int>(1, static_cast<int>(config_.heartbeat_interval * 1000 / kTick.count()));
}

SimFleet::~SimFleet() {
  for (auto& a : agents_)
    if (a->conn) a->conn->Close();
}

void SimFleet::ConnectAll() {
  asio::post(io_, [this] {
    for (auto& a : agents_) Connect(*a);
    Tick();
  });
}

void SimFleet::Connect(Agent& a) {
  const int node = a.node;
  ++a.attempts;
  a.conn = std::make_shared<SimConn>(io_);
  msg::Hello hello;
  hello.role = wire::Role::kAgent;
  hello.name = fmt::format("sim{}", node);
  hello.job_id = config_.job_id;
  hello.node_index = static_cast<uint32_t>(node);
  a.conn->Start(
      config_.coordinator, SourceAddress(node, 0), hello, config_.token, [this, node] { OnReady(node); },
      [this, node](const Frame& f) { OnFrame(node, f); }, [this, node](const std::string& why) { OnEnd(node, why); });
}

void SimFleet::OnReady(int node) {
  Agent& a = *agents_[node];
  msg::Register r;
  r.node_index = static_cast<uint32_t>(node);
  r.host = r.hostname = fmt::format("sim{}", node);
  r.addr = "127.0.0.1";
  r.ifname = "lo";
  r.cpus = 1;
  r.pid = ::getpid();
  r.heartbeat_addr = "127.0.0.1:9";
  SendFrom(a, wire::MsgType::kRegister, r.Encode());
  a.ready = true;
  std::lock_guard<std::mutex> lock(mu_);
  ++seen_.ready;
  changed_.notify_all();
}

void SimFleet::SendFrom(Agent& a, wire::MsgType type, const Bytes& payload) {
  if (a.silent || !a.conn) return;
  a.conn->Send(type, payload);
  a.last_sent = SimClock::now();
}

void SimFleet::OnFrame(int node, const Frame& f) {
  Agent& a = *agents_[node];
  if (a.silent) return;
  switch (f.type) {
    case wire::MsgType::kReserve: {
      auto m = msg::Reserve::Decode(f.payload);
      if (!m.ok()) return NoteError(fmt::format("sim{}: bad Reserve", node));
      {
        std::lock_guard<std::mutex> lock(mu_);
        GenerationSeen& g = seen_.gens[static_cast<int>(m->generation)];
        if (g.first_reserve == SimTime{}) g.first_reserve = SimClock::now();
      }
      return SendFrom(a, wire::MsgType::kReserved, msg::Reserved{m->generation, 29500 + m->generation, ""}.Encode());
    }
    case wire::MsgType::kAssign:
      return OnAssign(a, f);
    case wire::MsgType::kStop:
      return OnStop(a, f);
    case wire::MsgType::kShutdown: {
      a.shut_down = true;
      a.conn->Close();
      std::lock_guard<std::mutex> lock(mu_);
      ++seen_.shutdowns;
      changed_.notify_all();
      return;
    }
    case wire::MsgType::kError: {
      auto e = msg::Error::Decode(f.payload);
      return NoteError(fmt::format("sim{}: error from the coordinator: {}", node, e.ok() ? e->message : "?"));
    }
    default:
      return;  // Ping
  }
}

void SimFleet::OnAssign(Agent& a, const Frame& f) {
  auto m = msg::Assign::Decode(f.payload);
  if (!m.ok()) return NoteError(fmt::format("sim{}: bad Assign: {}", a.node, m.status().message()));
  const int gen = static_cast<int>(m->generation);
  const bool again = a.generation == gen;
  a.generation = gen;
  a.ranks.clear();
  for (const msg::WorkerSpec& w : m->workers) {
    a.ranks.push_back(w.rank);
    SendFrom(a, wire::MsgType::kWorkerStarted,
             msg::WorkerStarted{m->generation, w.rank, 100000 + w.rank}.Encode());
  }
  int world = -1;
  if (!m->workers.empty()) {
    const KeyValues& env = m->workers.front().env;
    world = ParseInt(EnvValue(env, "WORLD_SIZE")).value_or(-1);
    a.store_token = EnvValue(env, "DSLAUNCH_STORE_TOKEN");
    auto hp = SplitHostPort(EnvValue(env, "DSLAUNCH_STORE_ADDR"));
    boost::system::error_code ec;
    if (hp.ok()) a.store = asio::ip::tcp::endpoint(asio::ip::make_address(hp->first, ec), static_cast<uint16_t>(hp->second));
  }
  a.world = world;
  std::lock_guard<std::mutex> lock(mu_);
  GenerationSeen& g = seen_.gens[gen];
  if (again) ++g.duplicate_assigns;
  ++g.assigned;
  g.assigned_nodes.push_back(a.node);
  g.last_assign = SimClock::now();
  for (int r : a.ranks) {
    if (r < 0) continue;
    if (static_cast<size_t>(r) >= g.rank_hits.size()) g.rank_hits.resize(r + 1, 0);
    ++g.rank_hits[r];
    ++g.workers;
  }
  if (world != -1) g.world_size = (g.world_size == -1 || g.world_size == world) ? world : -2;
  changed_.notify_all();
}

void SimFleet::OnStop(Agent& a, const Frame& f) {
  auto m = msg::Stop::Decode(f.payload);
  if (!m.ok()) return NoteError(fmt::format("sim{}: bad Stop", a.node));
  const auto now = SimClock::now();
  if (a.generation == static_cast<int>(m->generation)) {
    for (int r : a.ranks) {
      msg::WorkerExited e;
      e.generation = m->generation;
      e.rank = r;
      e.pid = 100000 + r;
      e.signal = 15;
      SendFrom(a, wire::MsgType::kWorkerExited, e.Encode());
    }
    a.ranks.clear();
  }
  SendFrom(a, wire::MsgType::kStopped, msg::Stopped{m->generation}.Encode());
  std::lock_guard<std::mutex> lock(mu_);
  GenerationSeen& g = seen_.gens[static_cast<int>(m->generation)];
  if (g.first_stop == SimTime{}) g.first_stop = now;
  ++g.stopped;
  g.all_stopped = now;
  changed_.notify_all();
}

// As dsagent does (--join-timeout): a connection that fails before the
// agent registered (reset or refused by a coordinator whose backlog is full)
// is tried again a second later.
void SimFleet::OnEnd(int node, const std::string& why) {
  Agent& a = *agents_[node];
  if (a.killed || a.shut_down) return;
  if (!a.ready && a.attempts < kMaxAttempts) {
    auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(1));
    retry->async_wait([this, node, retry](boost::system::error_code ec) {
      if (!ec) Connect(*agents_[node]);
    });
    std::lock_guard<std::mutex> lock(mu_);
    ++seen_.retries;
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!a.ready) ++seen_.connect_failures;
  else ++seen_.unexpected_ends;
  if (seen_.errors.size() < kMaxErrors) seen_.errors.push_back(fmt::format("sim{}: {}", node, why));
  changed_.notify_all();
}

void SimFleet::NoteError(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (seen_.errors.size() < kMaxErrors) seen_.errors.push_back(what);
  changed_.notify_all();
}

// Agent i pings in slice i % ticks_per_interval_: each agent once per
// interval, spread over it as real agents' timers are.
void SimFleet::Tick() {
  const int slice = tick_count_++ % ticks_per_interval_;
  const wire::MsgType ping = wire::MsgType::kPing;
  const Bytes payload = msg::Ping{}.Encode();
  for (size_t i = static_cast<size_t>(slice); i < agents_.size(); i += static_cast<size_t>(ticks_per_interval_)) {
    Agent& a = *agents_[i];
    if (a.ready && !a.shut_down && a.conn && a.conn->open()) SendFrom(a, ping, payload);
  }
  tick_.expires_after(kTick);
  tick_.async_wait([this](boost::system::error_code ec) {
    if (!ec) Tick();
  });
}

void SimFleet::Silence(int node) {
  asio::post(io_, [this, node] {
    Agent& a = *agents_[node];
    a.silent = true;
    a.killed = true;
    std::lock_guard<std::mutex> lock(mu_);
    seen_.silenced[node] = a.last_sent;
    changed_.notify_all();
  });
}

void SimFleet::Kill(int node) {
  asio::post(io_, [this, node] {
    Agent& a = *agents_[node];
    a.killed = true;
    if (a.conn) a.conn->Close();
  });
}

void SimFleet::RunStore(int gen) {
  asio::post(io_, [this, gen] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.gens[gen].store_start = SimClock::now();
    }
    int client = 0;
    for (auto& a : agents_) {
      if (a->generation != gen || a->silent || a->killed) continue;
      for (int r : a->ranks) {
        BootstrapSpec spec{config_.job_id, a->store_token, r, a->world, gen};
        RunBootstrap(io_, a->store, SourceAddress(client++, 1), spec, [this, gen](bool ok, const std::string& why) {
          std::lock_guard<std::mutex> lock(mu_);
          GenerationSeen& g = seen_.gens[gen];
          ++(ok ? g.store_done : g.store_failed);
          if (!ok && seen_.errors.size() < kMaxErrors) seen_.errors.push_back("store: " + why);
          g.store_end = SimClock::now();
          changed_.notify_all();
        });
      }
    }
  });
}

void SimFleet::FinishWorkers(int gen) {
  asio::post(io_, [this, gen] {
    for (auto& a : agents_) {
      if (a->generation != gen || a->silent) continue;
      for (int r : a->ranks) {
        msg::WorkerExited e;
        e.generation = static_cast<uint32_t>(gen);
        e.rank = r;
        e.pid = 100000 + r;
        SendFrom(*a, wire::MsgType::kWorkerExited, e.Encode());
      }
      a->ranks.clear();
    }
  });
}

bool SimFleet::WaitUntil(const std::function<bool(const FleetSeen&)>& pred, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return pred(seen_); });
}

FleetSeen SimFleet::Seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

}  // namespace ds::sim
