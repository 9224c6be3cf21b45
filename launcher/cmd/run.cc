#include "launcher/cmd/run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "common/asio.h"
#include "common/env_registry.h"
#include "common/hmac_auth.h"
#include "common/log.h"
#include "common/netif.h"
#include "launcher/coordinator/assign_builder.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/config/env_files.h"
#include "launcher/cmd/exit_status.h"
#include "launcher/report/job_summary.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/spawn/ssh/ssh_probe.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {
namespace {

using std::chrono::milliseconds;

// The local address an agent for `host` binds, so that one machine can host
// several "nodes" (127.0.0.1, 127.0.0.2, ...). "" = let the route decide.
std::string LocalBindAddress(const std::string& host) {
  if (host == "localhost") return "127.0.0.1";
  if (host.rfind("127.", 0) == 0) return host;
  return "";
}

std::string FormatSeconds(double s) { return fmt::format("{}ms", static_cast<int64_t>(s * 1000)); }

// With an elastic min_nodes below the node count: probes every node and
// standby, prints one line per unreachable host and narrows `plan` to the
// reachable ones (a standby steps in for an unreachable node). Error when
// fewer than min_nodes answer (the failed hosts are printed first).
Status NarrowToReachable(LaunchPlan& plan, const SshOptions& ssh) {
  std::vector<Status> probes = ProbeNodes(Candidates(plan), ssh);
  std::vector<bool> reachable;
  for (const Status& st : probes) reachable.push_back(st.ok());
  if (std::find(reachable.begin(), reachable.end(), false) == reachable.end()) return Status::OK();
  auto narrowed = PlanOnNodes(plan, reachable);
  const char* what = narrowed.ok() ? "warning: unreachable, starting without it: " : "error: unreachable: ";
  for (const Status& st : probes)
    if (!st.ok()) std::cerr << "dslaunch: " << what << st.message() << "\n";
  if (!narrowed.ok()) return narrowed.status();
  std::cerr << fmt::format("dslaunch: starting on {} of {} hosts (elastic.min_nodes {}), world size {}\n",
                           narrowed->nodes.size(), plan.nodes.size(), plan.job.elastic.min_nodes,
                           narrowed->world_size);
  plan = std::move(narrowed).value();
  return Status::OK();
}

struct Launch {
  const LaunchPlan& plan;
  const std::vector<NodePlan> candidates = Candidates(plan);  // agents_ by index
  const CliOptions& cli;
  asio::io_context io;
  std::unique_ptr<Coordinator> coord;
  std::vector<std::unique_ptr<AgentHandle>> agents;  // by node; null if it failed to start
  asio::steady_timer watch{io};
  asio::steady_timer drain{io};
  // elastic.rejoin: state of the attempts to start new agents on lost nodes.
  Spawner* spawner = nullptr;
  std::vector<AgentSpec> specs;  // by node, as first started
  asio::steady_timer rejoin_timer{io};
  std::thread rejoin_thread;
  bool rejoin_busy = false;
  std::map<int, std::chrono::steady_clock::time_point> next_try;  // by node
  std::map<int, double> backoff;                                   // seconds, by node
  Launch(const LaunchPlan& p, const CliOptions& c) : plan(p), cli(c) {}
  ~Launch() {
    if (rejoin_thread.joinable()) rejoin_thread.join();
  }

  // Fails the job when an agent process ends before registering.
  void WatchAgents() {
    for (size_t i = 0; i < agents.size(); ++i) {
      if (!agents[i] || coord->NodeRegistered(static_cast<int>(i)) || agents[i]->Running()) continue;
      coord->Abort(candidates[i].host.name,
                   fmt::format("dsagent exited with status {} before registering", agents[i]->ExitStatus()),
                   kExitFailure);
    }
    if (coord->state() == CoordState::kDone) return;
    watch.expires_after(milliseconds(20));
    watch.async_wait([this](boost::system::error_code ec) {
      if (!ec) WatchAgents();
    });
  }

  // elastic.rejoin: starts a new agent on a lost node (it rejoins and idles
  // until the next restart). The first try is 2 s after the loss, then 4 s,
  // ... up to 30 s apart (also when a started agent never registered); one
  // attempt at a time, on its own thread (an SSH connect may take
  // connect_timeout).
  void Rejoin() {
    if (coord->state() == CoordState::kDone) return;
    const auto now = std::chrono::steady_clock::now();
    auto later = [&](double s) {
      return now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
    };
    for (int node : coord->LostNodes()) {
      if (!next_try.count(node)) {  // just lost
        backoff[node] = 2.0;
        next_try[node] = later(2.0);
      }
      if (rejoin_busy || now < next_try[node]) continue;
      rejoin_busy = true;
      backoff[node] = std::min(2 * backoff[node], 30.0);
      next_try[node] = later(backoff[node]);
      if (rejoin_thread.joinable()) rejoin_thread.join();
      rejoin_thread = std::thread([this, node] {
        auto started = std::make_shared<Result<std::unique_ptr<AgentHandle>>>(
            std::move(spawner->Start({specs[node]})[0]));
        asio::post(io, [this, node, started] { Rejoined(node, std::move(*started)); });
      });
    }
    rejoin_timer.expires_after(milliseconds(200));
    rejoin_timer.async_wait([this](boost::system::error_code ec) {
      if (!ec) Rejoin();
    });
  }

  void Rejoined(int node, Result<std::unique_ptr<AgentHandle>> started) {
    rejoin_busy = false;
    if (!started.ok()) {
      std::cerr << fmt::format("dslaunch: {} is still lost: {}; next try in {}s\n", candidates[node].host.name,
                               started.status().message(), backoff[node]);
      return;
    }
    if (agents[node]) agents[node]->Terminate();  // the lost agent, or one that never registered
    agents[node] = std::move(started).value();
    next_try.erase(node);  // registered or not, its next loss starts the clock again
  }

  // After the job: give agents a moment to exit on their own, then make sure.
  void DrainAgents(std::chrono::steady_clock::time_point deadline) {
    bool running = false;
    for (auto& a : agents) running = running || (a && a->Running());
    if (!running || std::chrono::steady_clock::now() > deadline) {
      for (auto& a : agents)
        if (a) a->Terminate();
      io.stop();
      return;
    }
    drain.expires_after(milliseconds(5));
    drain.async_wait([this, deadline](boost::system::error_code) { DrainAgents(deadline); });
  }
};

// Prints "dslaunch: error: <message>" and yields the exit code.
int Fail(const std::string& message, int code) {
  std::cerr << "dslaunch: error: " << message << "\n";
  return code;
}

}  // namespace

int RunJob(const LaunchPlan& plan_in, const CliOptions& cli) {
  // A closed stdout (`dslaunch ... | head`) must not kill the launcher and,
  // through the lost coordinator, the job: writes just fail.
  ::signal(SIGPIPE, SIG_IGN);
  LaunchPlan plan = plan_in;
  if (plan.nodes.empty())
    return Fail("the plan has no nodes", kExitUsage);
  auto dotenv = LoadDotEnvFiles(plan.job.working_dir);
  if (!dotenv.ok())
    return Fail(dotenv.status().message(), kExitUsage);
  // .dslaunch_env first: the job file's env: wins over it.
  plan.job.env.insert(plan.job.env.begin(), dotenv->begin(), dotenv->end());

  std::vector<std::string> argv =
      WorkerArgv(plan.job, SiblingBinary("dstrain", "runtime", EnvString("DSLAUNCH_DSTRAIN_PATH")));
  if (argv.empty())
    return Fail("nothing to run (no command and no trainer: section)", kExitUsage);
  std::string launcher = ResolveLauncher(cli.launcher, plan);
  auto ssh_or = SshOptionsForJob(plan.job, cli);
  if (!ssh_or.ok() && launcher != "local")
    return Fail(ssh_or.status().message(), kExitUsage);
  SshOptions ssh_fallback;  // local agents: only the connect timeout matters
  ssh_fallback.connect_timeout = cli.connect_timeout;
  const SshOptions* ssh_opts = ssh_or.ok() ? &*ssh_or : &ssh_fallback;
  // Elastic start: decide the hosts before the coordinator (which holds the
  // plan and waits for every node of it) and before any agent exists.
  if (launcher != "local" && ElasticStartAllowed(plan)) {
    if (Status st = NarrowToReachable(plan, *ssh_opts); !st.ok())
      return Fail(st.message(), kExitFailure);
  }
  auto spawner = MakeSpawner(launcher, plan, cli);
  if (!spawner.ok())
    return Fail(spawner.status().message(), kExitUsage);

  const ElasticOptions& el = plan.job.elastic;
  CoordinatorOptions co;
  co.job_id = RandomHex(6);
  co.secret = RandomHex(32);
  co.argv = argv;
  co.heartbeat_interval = el.heartbeat_interval;
  co.heartbeat_timeout = el.heartbeat_timeout;
  co.hang_timeout = el.hang_timeout;
  co.stop_grace = EnvSeconds("DSLAUNCH_STOP_GRACE");
  co.register_timeout = ssh_opts->connect_timeout + 20.0;
  co.master_port = plan.job.network.master_port;
  co.notice = [](const std::string& text) { std::cerr << "dslaunch: " << text << "\n"; };
  if (launcher == "local") {
    co.listen_addr = "127.0.0.1";
  } else {
    co.listen_addr = "0.0.0.0";
    // Hostfile names may be ssh config aliases: route to their HostName (SSH issue).
    auto route = RouteTo(SshHostName(plan.nodes[0].host.name, *ssh_opts));
    if (!route.ok())
      return Fail(route.status().message(), kExitFailure);
    co.advertise_host = route->local_addr;
  }

  bool tty = ::isatty(STDOUT_FILENO) != 0;
  LogMux mux(LogMuxOptions{plan.job.log_dir, EnvString("DSLAUNCH_COLOR"), stdout, tty});
  if (Status st = mux.Open(); !st.ok())
    return Fail(st.message(), kExitUsage);
  JobRecord record(&mux);
  Launch L(plan, cli);
  L.coord = std::make_unique<Coordinator>(L.io, plan, co, record);
  if (Status st = L.coord->Listen(); !st.ok())
    return Fail(st.message(), kExitFailure);

  asio::signal_set signals(L.io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        L.coord->RequestStop(sig);
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);

  std::string agent_path = SiblingBinary("dsagent", "agent", cli.agent_path.empty()
                                                                 ? EnvString("DSLAUNCH_AGENT_PATH")
                                                                 : cli.agent_path);
  std::vector<AgentSpec> specs;
  // One agent per node and per standby (it idles until a restart needs it).
  for (size_t i = 0; i < L.candidates.size(); ++i) {
    const NodePlan& n = L.candidates[i];
    AgentSpec s;
    s.host = n.host.name;
    s.node_index = static_cast<int>(i);
    s.ssh_port = n.host.ssh_port ? n.host.ssh_port : ssh_opts->default_port;
    s.user = n.host.user;
    s.argv = {agent_path, "--coordinator", L.coord->address(), "--node-index", std::to_string(i),
              "--job-id", co.job_id, "--host", n.host.name,
              "--heartbeat-interval", FormatSeconds(co.heartbeat_interval),
              "--heartbeat-timeout", FormatSeconds(co.heartbeat_timeout),
              "--connect-timeout", FormatSeconds(ssh_opts->connect_timeout)};
    if (launcher == "local") {
      std::string bind = LocalBindAddress(n.host.name);
      if (!bind.empty()) s.argv.insert(s.argv.end(), {"--bind", bind});
    }
    s.stdin_payload = co.secret;
    specs.push_back(std::move(s));
  }
  L.coord->Start();
  auto started = (*spawner)->Start(specs);
  for (size_t i = 0; i < started.size(); ++i) {
    if (started[i].ok()) {
      L.agents.push_back(std::move(started[i]).value());
    } else {
      L.agents.push_back(nullptr);
      L.coord->Abort(L.candidates[i].host.name, started[i].status().message(), kExitFailure);
    }
  }
  L.spawner = spawner->get();
  L.specs = specs;
  L.coord->OnDone([&] {
    L.watch.cancel();
    L.rejoin_timer.cancel();
    L.DrainAgents(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                        std::chrono::duration<double>(co.stop_grace + 3.0)));
  });
  if (L.coord->state() != CoordState::kDone) {
    L.WatchAgents();
    if (el.rejoin && el.max_restarts > 0) L.Rejoin();
  } else {
    L.DrainAgents(std::chrono::steady_clock::now());
  }
  L.io.run();
  mux.Flush();

  bool color = ::isatty(STDERR_FILENO) && EnvString("DSLAUNCH_COLOR") != "never";
  std::cerr << FormatSummary(record, L.coord->world_size(), color);
  return record.ExitCode();
}

}  // namespace ds
