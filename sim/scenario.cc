#include "sim/scenario.h"

#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/fd_limit.h"
#include "sim/sim_fleet.h"
#include "wire/hmac_auth.h"

namespace ds::sim {
namespace {

double SecondsBetween(SimTime from, SimTime to) {
  if (from == SimTime{} || to == SimTime{}) return -1;
  return std::chrono::duration<double>(to - from).count();
}

class Run {
 public:
  Run(const ScenarioOptions& o, CoordinatorProcess& coord, SimFleet& fleet, ScenarioReport& r)
      : o_(o), coord_(coord), fleet_(fleet), r_(r),
        step_(std::chrono::milliseconds(static_cast<int64_t>(o.step_timeout * 1000))) {}

  void Go() {
    if (!Rendezvous()) return;
    Steady();
    if (o_.store && !Store()) return;
    if (!SilentAgent()) return;
    if (!DeadAgent()) return;
    End();
  }

 private:
  bool Wait(const std::function<bool(const FleetSeen&)>& pred, const std::string& what) {
    if (fleet_.WaitUntil([&](const FleetSeen& s) { return pred(s) || s.connect_failures + s.unexpected_ends > 0; },
                         step_) &&
        [&] { FleetSeen s = fleet_.Seen(); return pred(s); }())
      return true;
    FleetSeen s = fleet_.Seen();
    std::string why = fmt::format("{}: not within {} s ({} agents registered, {} failed to connect, {} closed "
                                  "unexpectedly)", what, o_.step_timeout, s.ready, s.connect_failures,
                                  s.unexpected_ends);
    for (const auto& e : s.errors) why += "; " + e;
    r_.failures.push_back(why);
    return false;
  }
  static int Assigned(const FleetSeen& s, int gen) { return s.gen(gen) ? s.gen(gen)->assigned : 0; }

  bool Rendezvous() {
    const int n = o_.agents;
    const double cpu0 = coord_.Usage().cpu_seconds;
    const SimTime t0 = SimClock::now();
    fleet_.ConnectAll();
    if (!Wait([n](const FleetSeen& s) { return Assigned(s, 0) >= n; }, "every agent registered and assigned"))
      return false;
    r_.cpu_rendezvous = coord_.Usage().cpu_seconds - cpu0;
    FleetSeen s = fleet_.Seen();
    r_.connect_retries = s.retries;
    r_.to_registered = SecondsBetween(t0, s.gen(0)->first_reserve);
    r_.to_assigned = SecondsBetween(t0, s.gen(0)->last_assign);
    if (s.ready != n) r_.failures.push_back(fmt::format("{} agents registered, expected {}", s.ready, n));
    CheckGeneration(s, 0, n, o_.slots, {}, r_.failures);
    return r_.failures.empty();
  }

  // The measurement window itself (not a synchronisation): the coordinator's
  // CPU while every agent heartbeats and nothing else happens.
  void Steady() {
    if (o_.step_seconds > 0) fleet_.StartSteps(o_.step_seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const ProcessUsage a = coord_.Usage();
    const int64_t p0 = fleet_.Seen().progress_frames;
    std::this_thread::sleep_for(std::chrono::duration<double>(o_.steady_seconds));
    const ProcessUsage b = coord_.Usage();
    r_.progress_per_second = static_cast<double>(fleet_.Seen().progress_frames - p0) / o_.steady_seconds;
    fleet_.StopSteps();
    r_.cpu_per_second = (b.cpu_seconds - a.cpu_seconds) / o_.steady_seconds;
    r_.rss_running_kib = b.rss_kib;
  }

  bool Store() {
    const int world = o_.agents * o_.slots;
    fleet_.RunStore(0);
    if (!Wait([world](const FleetSeen& s) { return s.gen(0)->store_done + s.gen(0)->store_failed >= world; },
              "every worker through the store bootstrap"))
      return false;
    const GenerationSeen g = *fleet_.Seen().gen(0);
    r_.store_seconds = SecondsBetween(g.store_start, g.store_end);
    r_.store_ranks = g.store_done;
    if (g.store_failed) r_.failures.push_back(fmt::format("store: {} of {} ranks failed", g.store_failed, world));
    return g.store_failed == 0;
  }

  bool SilentAgent() {
    silent_ = o_.agents / 2;
    fleet_.Silence(silent_);
    const int n = o_.agents - 1;
    if (!Wait([this](const FleetSeen& s) { return s.silenced.count(silent_) && s.gen(0)->first_stop != SimTime{}; },
              fmt::format("the silent node {} detected (generation 0 stopped)", silent_)))
      return false;
    if (!Wait([n](const FleetSeen& s) { return Assigned(s, 1) >= n; }, "generation 1 assigned after the silent node"))
      return false;
    FleetSeen s = fleet_.Seen();
    r_.detect_seconds = SecondsBetween(s.silenced.at(silent_), s.gen(0)->first_stop);
    r_.silent_restart_seconds = SecondsBetween(s.gen(0)->first_stop, s.gen(1)->last_assign);
    if (r_.detect_seconds < o_.heartbeat_timeout - 0.05)
      r_.failures.push_back(fmt::format("the silent node was declared lost after {:.3f} s, before heartbeat_timeout "
                                        "{} s", r_.detect_seconds, o_.heartbeat_timeout));
    CheckGeneration(s, 1, n, o_.slots, {silent_}, r_.failures);
    return r_.failures.empty();
  }

  bool DeadAgent() {
    const int dead = 0;  // node rank 0: MASTER_ADDR moves too
    const int n = o_.agents - 2;
    const double cpu0 = coord_.Usage().cpu_seconds;
    const SimTime t = SimClock::now();
    fleet_.Kill(dead);
    if (!Wait([n](const FleetSeen& s) { return Assigned(s, 2) >= n; }, "generation 2 assigned after the dead node"))
      return false;
    r_.cpu_restart = coord_.Usage().cpu_seconds - cpu0;
    FleetSeen s = fleet_.Seen();
    r_.kill_stop_seconds = SecondsBetween(t, s.gen(1)->first_stop);
    r_.kill_restart_seconds = SecondsBetween(t, s.gen(2)->last_assign);
    CheckGeneration(s, 2, n, o_.slots, {silent_, dead}, r_.failures);
    return r_.failures.empty();
  }

  void End() {
    const int n = o_.agents - 2;
    r_.peak_rss_kib = coord_.Usage().peak_rss_kib;  // before it exits
    fleet_.FinishWorkers(2);
    if (!Wait([n](const FleetSeen& s) { return s.shutdowns >= n; }, "every agent shut down after the workers exited 0"))
      return;
    auto end = coord_.Wait(step_);
    if (!end.ok()) return r_.failures.push_back(end.status().message());
    r_.end = *end;
    const CoordinatorEnd want{0, 0, 2, 2, n * o_.slots};
    if (end->exit_status != 0 || end->job_exit_code != 0 || end->restarts != 2 || end->generation != 2 ||
        end->world_size != want.world_size)
      r_.failures.push_back(fmt::format("the coordinator ended with status {}, job exit code {}, {} restarts, "
                                        "generation {}, world size {}; expected 0, 0, 2, 2, {}", end->exit_status,
                                        end->job_exit_code, end->restarts, end->generation, end->world_size,
                                        want.world_size));
    const FleetSeen s = fleet_.Seen();
    if (s.unexpected_ends) r_.failures.push_back(fmt::format("{} agents were closed without a Shutdown", s.unexpected_ends));
  }

  const ScenarioOptions& o_;
  CoordinatorProcess& coord_;
  SimFleet& fleet_;
  ScenarioReport& r_;
  std::chrono::milliseconds step_;
  int silent_ = -1;
};

}  // namespace

void CheckGeneration(const FleetSeen& seen, int gen, int expected_nodes, int slots, const std::vector<int>& excluded,
                     std::vector<std::string>& failures) {
  const GenerationSeen* g = seen.gen(gen);
  if (!g) return failures.push_back(fmt::format("generation {}: no agent got an Assign", gen));
  const int world = expected_nodes * slots;
  if (g->assigned != expected_nodes)
    failures.push_back(fmt::format("generation {}: {} agents assigned, expected {}", gen, g->assigned, expected_nodes));
  if (g->duplicate_assigns != 0)
    failures.push_back(fmt::format("generation {}: {} agents got a second Assign", gen, g->duplicate_assigns));
  for (int node : g->assigned_nodes)
    for (int x : excluded)
      if (node == x) failures.push_back(fmt::format("generation {}: node {} was assigned but is gone", gen, node));
  int missing = 0, doubled = 0;
  for (int r = 0; r < world; ++r) {
    const int hits = r < static_cast<int>(g->rank_hits.size()) ? g->rank_hits[r] : 0;
    missing += hits == 0;
    doubled += hits > 1;
  }
  if (static_cast<int>(g->rank_hits.size()) > world || missing || doubled)
    failures.push_back(fmt::format("generation {}: ranks not 0..{} once each ({} missing, {} given twice, "
                                   "highest {})", gen, world - 1, missing, doubled,
                                   static_cast<int>(g->rank_hits.size()) - 1));
  if (g->world_size != world)
    failures.push_back(fmt::format("generation {}: WORLD_SIZE {} (-2: differs between workers), expected {}", gen,
                                   g->world_size, world));
}

Result<ScenarioReport> RunScenario(const ScenarioOptions& o) {
  if (o.agents < 3) return Status::InvalidArgument("--agents: at least 3 (one goes silent, one dies)");
  // This process holds every agent's and every store client's connection.
  DS_RETURN_IF_ERROR(RaiseFdLimit(SimDescriptors(o.agents, o.slots, o.store), "the simulated agents"));
  CoordinatorSpec spec;
  spec.nodes = o.agents;
  spec.slots = o.slots;
  spec.store = o.store;
  spec.heartbeat_interval = o.heartbeat_interval;
  spec.heartbeat_timeout = o.heartbeat_timeout;
  spec.max_restarts = 2;
  spec.job_id = "dssim";
  spec.secret = RandomHex(32);
  spec.agent_token = RandomHex(32);
  spec.watch = o.watch;
  spec.etcd = o.etcd;
  DS_ASSIGN_OR_RETURN(auto coord, CoordinatorProcess::Start(spec));

  ScenarioReport r;
  r.options = o;
  r.rss_before_kib = coord->Usage().rss_kib;
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  FleetConfig fc;
  fc.agents = o.agents;
  fc.job_id = spec.job_id;
  fc.token = spec.agent_token;
  fc.coordinator = asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), static_cast<uint16_t>(coord->port()));
  fc.heartbeat_interval = o.heartbeat_interval;
  fc.heartbeat_timeout = o.heartbeat_timeout;
  {
    SimFleet fleet(io, fc);
    std::thread io_thread([&io] { io.run(); });
    Run(o, *coord, fleet, r).Go();
    if (r.peak_rss_kib == 0) r.peak_rss_kib = coord->Usage().peak_rss_kib;
    io.stop();
    io_thread.join();
  }
  return r;
}

std::string ReportJson(const ScenarioReport& r) {
  nlohmann::json j;
  j["agents"] = r.options.agents;
  j["slots"] = r.options.slots;
  j["heartbeat_interval"] = r.options.heartbeat_interval;
  j["heartbeat_timeout"] = r.options.heartbeat_timeout;
  j["to_registered_s"] = r.to_registered;
  j["to_assigned_s"] = r.to_assigned;
  j["connect_retries"] = r.connect_retries;
  j["coordinator_cpu_rendezvous_s"] = r.cpu_rendezvous;
  j["coordinator_cpu_restart_s"] = r.cpu_restart;
  j["coordinator_cpu_per_s"] = r.cpu_per_second;
  j["step_seconds"] = r.options.step_seconds;
  j["progress_per_s"] = r.progress_per_second;
  j["rss_before_kib"] = r.rss_before_kib;
  j["rss_running_kib"] = r.rss_running_kib;
  j["peak_rss_kib"] = r.peak_rss_kib;
  j["store_s"] = r.store_seconds;
  j["store_ranks"] = r.store_ranks;
  j["detect_s"] = r.detect_seconds;
  j["silent_restart_s"] = r.silent_restart_seconds;
  j["kill_stop_s"] = r.kill_stop_seconds;
  j["kill_restart_s"] = r.kill_restart_seconds;
  j["etcd"] = !r.options.etcd.empty();
  j["states_offered"] = r.end.states_offered;
  j["etcd_writes"] = r.end.etcd_writes;
  j["state_bytes"] = r.end.state_bytes;
  j["ok"] = r.ok();
  j["failures"] = r.failures;
  return j.dump();
}

std::string ReportText(const ScenarioReport& r) {
  std::string t = fmt::format("dssim: {} agents x {} workers, heartbeat {} s / timeout {} s\n", r.options.agents,
                              r.options.slots, r.options.heartbeat_interval, r.options.heartbeat_timeout);
  t += fmt::format("  start -> all registered          {:.3f} s\n", r.to_registered);
  t += fmt::format("  start -> all assigned            {:.3f} s ({} connects retried; coordinator CPU {:.3f} s)\n",
                   r.to_assigned, r.connect_retries, r.cpu_rendezvous);
  t += fmt::format("  coordinator CPU, steady          {:.4f} s per s\n", r.cpu_per_second);
  t += fmt::format("  progress summaries, steady       {:.0f} per s (a step every {} s)\n", r.progress_per_second,
                   r.options.step_seconds);
  t += fmt::format("  coordinator memory               {:.1f} MiB before, {:.1f} MiB running, {:.1f} MiB peak\n",
                   r.rss_before_kib / 1024.0, r.rss_running_kib / 1024.0, r.peak_rss_kib / 1024.0);
  if (r.options.store) t += fmt::format("  store bootstrap, {} ranks      {:.3f} s\n", r.store_ranks, r.store_seconds);
  t += fmt::format("  silent agent: last beat -> stop  {:.3f} s\n", r.detect_seconds);
  t += fmt::format("  stop -> next generation assigned {:.3f} s\n", r.silent_restart_seconds);
  t += fmt::format("  dead agent: close -> stop        {:.3f} s\n", r.kill_stop_seconds);
  t += fmt::format("  close -> next generation assigned {:.3f} s (coordinator CPU {:.3f} s)\n", r.kill_restart_seconds,
                   r.cpu_restart);
  if (!r.options.etcd.empty())
    t += fmt::format("  etcd: {} states offered, {} written, the last {:.1f} KiB\n", r.end.states_offered,
                     r.end.etcd_writes, r.end.state_bytes / 1024.0);
  t += r.ok() ? "  every check passed\n" : "  FAILED:\n";
  for (const auto& f : r.failures) t += "    " + f + "\n";
  return t;
}

}  // namespace ds::sim
