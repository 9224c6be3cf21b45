#include "sim/sim_fleet.h"

#include <fmt/format.h>

#include "agent/control/agent_exit.h"
#include "sim/sim_store.h"

namespace ds::sim {
namespace {

constexpr size_t kMaxErrors = 8;
constexpr int kMaxAttempts = 30;  // connects per agent before it gives up (dsagent: --join-timeout)
constexpr int kPerSourceAddress = 25000;  // connections per loopback source address (ephemeral ports)

// Loopback source address number i / kPerSourceAddress of a group: agents
// connect from 127.0.k.2, store clients from 127.0.k.3, so neither runs out
// of the ~28K ephemeral ports one address has.
asio::ip::address SourceAddress(int i, int group) {
  return asio::ip::make_address_v4(fmt::format("127.0.{}.{}", i / kPerSourceAddress, 2 + group));
}

}  // namespace

SimFleet::SimFleet(asio::io_context& io, FleetConfig config)
    : io_(io), config_(std::move(config)), step_timer_(io) {
  for (int i = 0; i < config_.agents; ++i) {
    SimAgentConfig c;
    c.job_id = config_.job_id;
    c.token = config_.token;
    c.coordinator = config_.coordinator;
    c.source = SourceAddress(i, 0);
    c.heartbeat_interval = config_.heartbeat_interval;
    c.heartbeat_timeout = config_.heartbeat_timeout;
    c.max_attempts = kMaxAttempts;
    agent_configs_.push_back(c);
  }
  for (int i = 0; i < config_.agents; ++i)
    agents_.push_back(std::make_unique<SimAgent>(io_, i, agent_configs_[i], static_cast<SimAgentObserver&>(*this)));
}

SimFleet::~SimFleet() = default;

void SimFleet::ConnectAll() {
  asio::post(io_, [this] {
    for (auto& a : agents_) a->Connect();
  });
}

void SimFleet::Registered(int) {
  std::lock_guard<std::mutex> lock(mu_);
  ++seen_.ready;
  changed_.notify_all();
}

void SimFleet::Received(int node, const Frame& f) {
  if (f.type == wire::MsgType::kFenced) {  // a leader with failover (dssim --etcd): the frame inside
    auto fenced = msg::Fenced::Decode(f.payload);
    if (!fenced.ok()) return NoteError(fmt::format("sim{}: bad Fenced", node));
    return Received(node, Frame{static_cast<wire::MsgType>(fenced->type), std::move(fenced->payload)});
  }
  if (f.type != wire::MsgType::kReserve && f.type != wire::MsgType::kStop) return;
  const auto now = SimClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (f.type == wire::MsgType::kReserve) {
    auto m = msg::Reserve::Decode(f.payload);
    if (!m.ok()) return NoteError(fmt::format("sim{}: bad Reserve", node));
    GenerationSeen& g = seen_.gens[static_cast<int>(m->generation)];
    if (g.first_reserve == SimTime{}) g.first_reserve = now;
    return;
  }
  auto m = msg::Stop::Decode(f.payload);
  if (!m.ok()) return NoteError(fmt::format("sim{}: bad Stop", node));
  GenerationSeen& g = seen_.gens[static_cast<int>(m->generation)];
  if (g.first_stop == SimTime{}) g.first_stop = now;
}

void SimFleet::Sent(int node, wire::MsgType type, const Bytes& payload) {
  if (type == wire::MsgType::kProgress) {
    std::lock_guard<std::mutex> lock(mu_);
    ++seen_.progress_frames;
    return;
  }
  if (type != wire::MsgType::kStopped) return;
  auto m = msg::Stopped::Decode(payload);
  std::lock_guard<std::mutex> lock(mu_);
  if (!m.ok()) return NoteError(fmt::format("sim{}: sent a bad Stopped", node));
  GenerationSeen& g = seen_.gens[static_cast<int>(m->generation)];
  ++g.stopped;
  g.all_stopped = SimClock::now();
  changed_.notify_all();
}

void SimFleet::WorkersStarted(int node, const msg::Assign& m, bool again) {
  const int world = agents_[node]->workers().world();
  std::lock_guard<std::mutex> lock(mu_);
  GenerationSeen& g = seen_.gens[static_cast<int>(m.generation)];
  if (again) ++g.duplicate_assigns;
  ++g.assigned;
  g.assigned_nodes.push_back(node);
  g.last_assign = SimClock::now();
  for (const msg::WorkerSpec& w : m.workers) {
    if (w.rank < 0) continue;
    if (static_cast<size_t>(w.rank) >= g.rank_hits.size()) g.rank_hits.resize(w.rank + 1, 0);
    ++g.rank_hits[w.rank];
    ++g.workers;
  }
  if (world != -1) g.world_size = (g.world_size == -1 || g.world_size == world) ? world : -2;
  changed_.notify_all();
}

void SimFleet::Retried(int) {
  std::lock_guard<std::mutex> lock(mu_);
  ++seen_.retries;
}

void SimFleet::Left(int node, int exit_code, bool registered, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (registered && exit_code == ExitCode(AgentExit::kShutdown)) ++seen_.shutdowns;
  else if (!registered) ++seen_.connect_failures;
  else ++seen_.unexpected_ends;
  if (!(registered && exit_code == 0)) NoteError(fmt::format("sim{}: {}", node, why));
  changed_.notify_all();
}

void SimFleet::NoteError(const std::string& what) {
  if (seen_.errors.size() < kMaxErrors) seen_.errors.push_back(what);
  changed_.notify_all();
}

void SimFleet::Silence(int node) {
  asio::post(io_, [this, node] {
    const SimTime last = agents_[node]->Silence();
    std::lock_guard<std::mutex> lock(mu_);
    seen_.silenced[node] = last;
    changed_.notify_all();
  });
}

void SimFleet::Kill(int node) {
  asio::post(io_, [this, node] { agents_[node]->Kill(); });
}

void SimFleet::RunStore(int gen) {
  asio::post(io_, [this, gen] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.gens[gen].store_start = SimClock::now();
    }
    int client = 0;
    for (auto& a : agents_) {
      SimWorkers& w = a->workers();
      if (w.generation() != gen || !a->alive()) continue;
      for (int r : w.ranks()) {
        BootstrapSpec spec{config_.job_id, w.store_token(), r, w.world(), gen};
        SimAgent* agent = a.get();
        RunBootstrap(io_, w.store(), SourceAddress(client++, 1), spec, [this, gen, r, agent](bool ok, const std::string& why) {
          if (ok && agent->workers().generation() == gen) agent->workers().Beat(r);  // its first step
          std::lock_guard<std::mutex> lock(mu_);
          GenerationSeen& g = seen_.gens[gen];
          ++(ok ? g.store_done : g.store_failed);
          if (!ok) NoteError("store: " + why);
          g.store_end = SimClock::now();
          changed_.notify_all();
        });
      }
    }
  });
}

void SimFleet::StartSteps(double step_seconds) {
  asio::post(io_, [this, step_seconds] {
    step_seconds_ = step_seconds;
    StepAll();
  });
}

void SimFleet::StopSteps() {
  asio::post(io_, [this] {
    step_seconds_ = 0;
    step_timer_.cancel();
  });
}

void SimFleet::StepAll() {
  if (step_seconds_ <= 0) return;
  const auto compute = static_cast<int64_t>(step_seconds_ * 0.8e6);
  for (auto& a : agents_) {
    if (!a->alive()) continue;
    const std::set<int> running = a->workers().running();
    for (int r : running) a->workers().Beat(r, compute, 32);
  }
  step_timer_.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(step_seconds_)));
  step_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) StepAll();
  });
}

void SimFleet::FinishWorkers(int gen) {
  asio::post(io_, [this, gen] {
    for (auto& a : agents_)
      if (a->alive() && a->workers().generation() == gen) a->workers().Finish(gen);
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
