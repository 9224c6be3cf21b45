#include "launcher/cmd/run.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "common/asio.h"
#include "common/defaults.h"
#include "common/duration.h"
#include "common/env_registry.h"
#include "common/fd_limit.h"
#include "common/files.h"
#include "common/log.h"
#include "common/netif.h"
#include "launcher/cmd/attach_service.h"
#include "launcher/cmd/job_leader.h"
#include "launcher/cmd/job_replicas.h"
#include "launcher/cmd/job_takeover.h"
#include "launcher/cmd/member_keeper.h"
#include "launcher/cmd/standby.h"
#include "launcher/cmd/job_watch.h"
#include "launcher/cmd/launch_choice.h"
#include "launcher/cmd/pid_file.h"
#include "launcher/cmd/pty_window.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/coordinator/assign_builder.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/coordinator/job_state.h"
#include "launcher/fleet/agent_fleet.h"
#include "launcher/fleet/launch_tree.h"
#include "launcher/join/loopback_secret.h"
#include "launcher/join/per_node_spawner.h"
#include "launcher/report/job_summary.h"
#include "launcher/report/terminal_writer.h"
#include "launcher/spawn/ssh/remote_command.h"
#include "launcher/spawn/ssh/ssh_probe.h"
#include "wire/client_conn.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

// A new private directory (0700) for -r/-t without --log-dir, kept after the
// job: $TMPDIR/dslaunch-logs-XXXXXX.
Result<std::string> FreshLogDir() {
  std::error_code ec;
  std::string path = (std::filesystem::temp_directory_path(ec) / "dslaunch-logs-XXXXXX").string();
  if (ec || ::mkdtemp(path.data()) == nullptr)
    return Status::IOError("cannot make a directory for the per-rank files (" + path + "): " +
                           (ec ? ec.message() : std::string(std::strerror(errno))));
  return path;
}

constexpr size_t kStderrQueueBytes = 1 << 20;

// Everything decided before the first agent starts.
struct Launch {
  LaunchPlan plan;
  std::string launcher;  // "local", "ssh", "pdsh", "slurm", "openmpi", "mpich" or "per-node"
  const PerNodeLaunch* per_node = nullptr;  // the per-node form's node 0
  SshOptions ssh;
  std::unique_ptr<Spawner> spawner;
  CoordinatorOptions coord;
};

// The local address an agent for `host` binds, so that one machine can host
// several "nodes" (127.0.0.1, 127.0.0.2, ...). "" = let the route decide.
std::string LocalBindAddress(const std::string& host) {
  if (host == "localhost") return "127.0.0.1";
  if (host.rfind("127.", 0) == 0) return host;
  return "";
}

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
  if (!narrowed.ok()) return Status::Unavailable(narrowed.status().message());
  std::cerr << fmt::format("dslaunch: starting on {} of {} hosts (elastic.min_nodes {}), world size {}\n",
                           narrowed->nodes.size(), plan.nodes.size(), plan.job.elastic.min_nodes,
                           narrowed->world_size);
  plan = std::move(narrowed).value();
  return Status::OK();
}

// The coordinator's settings: the job's elastic section, a fresh job id and
// secret, and where agents reach it (loopback, or the address that routes
// to the first host).
Result<CoordinatorOptions> FreshCoordinatorOptions(const Launch& l, const CliOptions& cli,
                                                   std::vector<std::string> argv) {
  const ElasticOptions& el = l.plan.job.elastic;
  CoordinatorOptions co;
  co.job_id = RandomHex(6);
  // The start time first: a later run's id sorts after an earlier one's
  // (SnapshotIndex prefers the later run's save of a step).
  co.run_id = fmt::format("{:08x}{}", static_cast<uint32_t>(std::time(nullptr)), RandomHex(4));
  co.secret = RandomHex(32);
  co.argv = std::move(argv);
  co.heartbeat_interval = el.heartbeat_interval;
  co.heartbeat_timeout = el.heartbeat_timeout;
  if (l.plan.job.coordinator.on()) co.coordinator_grace = CoordinatorGrace(l.plan.job.coordinator, el.heartbeat_timeout);
  co.hang_timeout = el.hang_timeout;
  co.stop_grace = cli.stop_grace;
  co.register_timeout = l.ssh.connect_timeout + kRegisterGrace;
  if (cli.fanout_tree > 0) {  // each level may take a hand-off's time, the last retry from here one more
    const LaunchTree tree(static_cast<int>(Candidates(l.plan).size()), cli.fanout_tree, {});
    co.register_timeout *= tree.Depth() + 1;
  }
  co.master_port = l.plan.job.network.master_port;
  if (l.per_node) {  // every node derives the same id and its key from the shared secret
    co.job_id = l.per_node->job_id;
    co.secret = l.per_node->secret;
    DS_ASSIGN_OR_RETURN(co.listen_addr, PerNodeListenAddress(*l.per_node));
    co.listen_port = l.per_node->port;
    co.advertise_host = l.per_node->addr;
    co.register_timeout = kPerNodeJoinTimeout;
    co.hosts_from_agents = true;  // the plan's node0, node1, ... are placeholders
    if (const PerNodeLaunch& pn = *l.per_node; pn.join) {  // ranks given at join
      co.join_key = PerNodeJoinToken(pn);
      co.listen_fd = pn.listen_fd;
      co.register_timeout = pn.conf.join_timeout;
      if (pn.min_nodes < pn.nnodes) {
        co.start_nodes = pn.min_nodes;
        co.last_call = pn.conf.last_call_timeout;
      }
    }
    return co;
  }
  if (l.launcher == "local") return co;
  co.listen_addr = "0.0.0.0";
  // Hostfile names may be ssh config aliases: route to their HostName (a
  // Slurm node to its NodeAddr).
  const HostEntry& first = l.plan.nodes[0].host;
  auto route = RouteTo(first.addr.empty() ? SshHostName(first.name, l.ssh) : first.addr);
  if (!route.ok()) return Status::Unavailable(route.status().message());
  co.advertise_host = route->local_addr;
  return co;
}

// --resume JOB: the job's id, secret, run and address instead of fresh ones
// (job_takeover.h); else FreshCoordinatorOptions.
Result<CoordinatorOptions> CoordinatorOptionsFor(const Launch& l, const CliOptions& cli,
                                                 std::vector<std::string> argv) {
  DS_ASSIGN_OR_RETURN(CoordinatorOptions co, FreshCoordinatorOptions(l, cli, std::move(argv)));
  if (cli.resume_job.empty()) return co;
  DS_RETURN_IF_ERROR(CheckJobId(cli.resume_job));
  const bool started_by_leader = cli.standby_index >= 0;  // standby.h: the secret on stdin, an address of its own
  if (started_by_leader && !cli.standby) return Status::InvalidArgument("--standby-index goes with --standby JOB");
  if (l.per_node || l.plan.job.coordinator.etcd.empty())
    return Status::InvalidArgument(fmt::format(
        "--resume {}: {}", cli.resume_job,
        l.per_node                          ? "the per-node form has no takeover yet"
        : l.plan.job.coordinator.replicas   ? "with coordinator.replicas the job's own standbys take it over (its "
                                              "etcd trusts only their certificates)"
                                            : "the job file has no coordinator: etcd: (where the job's state is)"));
  TakeoverRecord r;
  if (!started_by_leader) {
    DS_ASSIGN_OR_RETURN(r, ReadTakeoverRecord(cli.resume_job));
  }
  Result<JobState> s = ReadJobState(l.plan.job, cli.resume_job);
  if (!s.ok()) return Status::Unavailable(fmt::format("--resume {}: {}", cli.resume_job, s.status().message()));
  co.job_id = cli.resume_job;
  co.run_id = s->run_id;
  if (started_by_leader) {
    co.secret = ReadStandbyInput().secret;
    if (co.secret.empty()) return Status::InvalidArgument("--standby-index: expected the job secret on stdin");
    return co;
  }
  DS_ASSIGN_OR_RETURN(auto hp, SplitHostPort(r.address));
  co.secret = r.secret;
  co.advertise_host = hp.first;
  co.listen_port = hp.second;  // where the agents, adrift, dial
  return co;
}

// Room for every descriptor the job holds here: per agent its connection
// and its process's pipes or SSH session (at most 4), per worker its store
// client and its log file. When the limit cannot be raised that far it is a
// warning while the agents alone fit, else an error.
Status MakeRoomForDescriptors(const LaunchPlan& plan) {
  const uint64_t agents = Candidates(plan).size();
  const uint64_t workers = static_cast<uint64_t>(plan.world_size);
  Status st = RaiseFdLimit(agents * 4 + workers * 2 + 256, fmt::format("{} agents and {} workers", agents, workers));
  if (st.ok()) return st;
  if (FdLimit() < agents * 4 + 64) return st;
  std::cerr << "dslaunch: warning: " << st.message() << "\n";
  return Status::OK();
}

// Decides the launcher, the SSH settings, the hosts of an elastic start and
// the spawner. Errors are classified as run.h says.
Result<Launch> PrepareLaunch(const LaunchPlan& plan_in, const CliOptions& cli, const PerNodeLaunch* per_node) {
  Launch l{plan_in};
  l.per_node = per_node;
  DS_ASSIGN_OR_RETURN(LaunchChoice choice, ChooseLaunch(l.plan, cli, per_node));  // what the dry run checks too
  l.launcher = choice.launcher;
  l.ssh = choice.ssh;
  // Coordinator failover: an agent (or standby) over ssh outlives the launcher's session.
  l.ssh.outlive_session = l.plan.job.coordinator.on();
  std::vector<std::string> argv = std::move(choice.argv);
  // Elastic start: decide the hosts before the coordinator (which holds the
  // plan and waits for every node of it) and before any agent exists.
  // (Over SSH only: under Slurm the allocation's nodes are up by definition.)
  // A coordinator taking a job over starts no agent: it probes no host (one
  // on another host need not reach them over ssh at all).
  const bool over_ssh = cli.resume_job.empty() && (l.launcher == "ssh" || l.launcher == "pdsh" ||
                                                   l.launcher == "openmpi" || l.launcher == "mpich");
  if (over_ssh && ElasticStartAllowed(l.plan)) DS_RETURN_IF_ERROR(NarrowToReachable(l.plan, l.ssh));
  else if (over_ssh) DS_RETURN_IF_ERROR(CheckNodesResolve(Candidates(l.plan), l.ssh));  // every one named, not the first
  DS_RETURN_IF_ERROR(MakeRoomForDescriptors(l.plan));
  for (const std::string& w : CheckpointWarnings(l.plan.job.checkpoint, static_cast<int>(l.plan.nodes.size())))
    std::cerr << "dslaunch: warning: " << w << "\n";
  auto spawner = per_node ? Result<std::unique_ptr<Spawner>>(std::make_unique<PerNodeSpawner>(
                               0, LocalSpawnerOptions{cli.stop_grace}))
                         : MakeSpawner(l.launcher, l.plan, l.ssh, cli.stop_grace, cli.launcher_args);
  if (!spawner.ok()) return Status::InvalidArgument(spawner.status().message());
  l.spawner = std::move(spawner).value();
  DS_ASSIGN_OR_RETURN(l.coord, CoordinatorOptionsFor(l, cli, std::move(argv)));
  return l;
}

// One agent per node and per standby (a standby idles until a restart needs it).
std::vector<AgentSpec> AgentSpecs(const Launch& l, const CliOptions& cli, const std::string& coordinator) {
  const std::vector<NodePlan> candidates = Candidates(l.plan);
  std::vector<AgentSpec> specs;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const NodePlan& n = candidates[i];
    AgentSpec s;
    s.host = n.host.name;
    s.node_index = static_cast<int>(i);
    s.ssh_port = n.host.ssh_port ? n.host.ssh_port : l.ssh.default_port;
    s.user = n.host.user;
    s.argv = AgentArgv(cli, coordinator, static_cast<int>(i), l.coord.job_id, n.host.name,
                       l.coord.heartbeat_interval, l.coord.heartbeat_timeout, l.ssh.connect_timeout);
    const std::string bind = l.launcher == "local" ? LocalBindAddress(n.host.name) : "";
    if (!bind.empty()) s.argv.insert(s.argv.end(), {"--bind", bind});
    // Coordinator failover: a lost coordinator's workers run on while a new leader takes over.
    if (const CoordinatorSpec& c = l.plan.job.coordinator; !c.etcd.empty())
      s.argv.insert(s.argv.end(), {"--coordinator-grace",
                                   fmt::format("{}ms", ToMillis(CoordinatorGrace(c, l.coord.heartbeat_timeout)))});
    specs.push_back(std::move(s));
  }
  return specs;
}

// --fanout-tree: a registered agent starts each child's agent with the
// node's own OpenSSH client, as the launcher would (same user, port, host
// key policy, connect timeout, forwarded variables).
FleetTree TreeFor(const Launch& l, const CliOptions& cli) {
  FleetTree tree;
  if (cli.fanout_tree <= 0) return tree;
  tree.width = cli.fanout_tree;
  tree.handoff_timeout = Seconds(l.ssh.connect_timeout + kRegisterGrace);
  tree.command = [ssh = l.ssh](const AgentSpec& child, int parent) {
    std::vector<std::string> argv = child.argv;
    argv.insert(argv.end(), {"--tree-parent", std::to_string(parent)});
    return OpenSshArgv(SshTarget{child.host, child.user, child.ssh_port}, ssh, RemoteCommand(argv, ForwardedEnv(ssh)));
  };
  return tree;
}

// While alive, diagnostics go through the LogMux (below an open progress
// line, above the status line), posted to the io thread from any thread;
// after, straight to `err` again (on every return).
class DiagnosticsThroughMux {
 public:
  DiagnosticsThroughMux(asio::io_context& io, LogMux& mux, TerminalWriter& err) : err_(err) {
    LogSetSink([&io, &mux](std::string line) {
      if (!line.empty() && line.back() == '\n') line.pop_back();
      asio::post(io, [&mux, line = std::move(line)] { mux.Notice(line); });
    });
  }
  ~DiagnosticsThroughMux() { LogSetSink([&w = err_](std::string line) { w.Write(std::move(line)); }); }

 private:
  TerminalWriter& err_;
};

// SIGINT, SIGTERM and SIGHUP ask the coordinator to stop, each time one
// comes; with coordinator failover (`failover` true) a SIGHUP (the terminal
// gone) does not: the job goes on under this dslaunch.
void StopOnSignals(asio::signal_set& signals, Coordinator& coord, bool failover,
                   const std::function<void(const std::string&)>& notice) {
  signals.async_wait([&signals, &coord, failover, &notice](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP && failover)
      notice("SIGHUP (the terminal is gone?): the job goes on (coordinator failover); SIGINT or SIGTERM stop it");
    else
      coord.RequestStop(sig);
    StopOnSignals(signals, coord, failover, notice);
  });
}

// DSLAUNCH_STDIN_LIFELINE: stdin closing means whoever started us is gone
// (`dslaunch cluster run`'s docker exec client): stop as a signal would,
// the one whose number came last on stdin if any (a Ctrl-C there: SIGINT).
// Lives on the io thread; says so through the LogMux (above the status line).
class StdinLifeline {
 public:
  StdinLifeline(asio::io_context& io, Coordinator& coord, LogMux& mux) : fd_(io), coord_(coord), mux_(mux) {}
  // Starts watching stdin. Error: InvalidArgument when it is no pipe or socket.
  Status Watch() {
    boost::system::error_code ec;
    int fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    fd_.assign(fd, ec);
    if (ec) {
      ::close(fd);
      return Status::InvalidArgument("DSLAUNCH_STDIN_LIFELINE: stdin cannot be watched (" + ec.message() +
                                     "); it must be a pipe or a socket");
    }
    Read();
    return Status::OK();
  }
  void Close() {
    boost::system::error_code ignored;
    fd_.close(ignored);
  }

 private:
  void Read() {
    fd_.async_read_some(asio::buffer(received_), [this](const boost::system::error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) {
        mux_.Notice(fmt::format("dslaunch: stdin closed (DSLAUNCH_STDIN_LIFELINE): stopping the job as {} would",
                                SignalName(signal_)));
        coord_.RequestStop(signal_);
        return;
      }
      if (n > 0 && (received_[n - 1] == SIGINT || received_[n - 1] == SIGTERM || received_[n - 1] == SIGHUP))
        signal_ = received_[n - 1];
      Read();
    });
  }

  asio::posix::stream_descriptor fd_;
  Coordinator& coord_;
  LogMux& mux_;
  std::array<unsigned char, 256> received_;
  int signal_ = SIGTERM;
};

// The fleet's options. The per-node form on loopback: the secret is
// published (into `published`) only once this process holds the rendezvous
// port, so nobody else's listener gets a key; said as a notice (the status
// line is up by now: a line written past the LogMux would land on its row).
Result<FleetOptions> FleetOptionsFor(const Launch& l, const CliOptions& cli,
                                     std::unique_ptr<LoopbackSecret>& published) {
  const ElasticOptions& el = l.plan.job.elastic;
  FleetOptions fleet_options{l.coord.notice, nullptr, TreeFor(l, cli), el.rejoin && el.max_restarts > 0};
  if (const PerNodeLaunch* pn = l.per_node) {
    if (pn->secret_from == PerNodeLaunch::Secret::kLoopback) {
      DS_ASSIGN_OR_RETURN(published, LoopbackSecret::Publish(fmt::format("{}:{}", pn->addr, pn->port), pn->secret));
      l.coord.notice(fmt::format("no DSLAUNCH_SECRET_FILE: the other nodes (this user, this machine) read a "
                                 "fresh job secret from {}", published->path()));
    }
    fleet_options.derived_token = [pn](int node) { return PerNodeAgentToken(*pn, node); };
  } else if (!l.plan.job.coordinator.etcd.empty()) {
    // Coordinator failover: a coordinator taking over knows every agent's key (job_takeover.h).
    fleet_options.derived_token = [secret = l.coord.secret, job = l.coord.job_id](int node) {
      return FailoverAgentToken(secret, job, node);
    };
  }
  return fleet_options;
}

// No longer the leader (failover::LeaderSession deposed it: another leads,
// or led meanwhile, or etcd was gone for longer than the agents wait for
// it): everything this dslaunch would do from here on
// (stop its agents' and standbys' sessions, drain the fleet, write the job's
// end) would act on a job another coordinator leads. So it says so and
// leaves at once, touching no process of the job, as a killed dslaunch
// would, its attach file and `own_files` (its --save_pid file, its client
// certificates of the job's etcd) removed first, and a standby's etcd
// member ended with its files (the job goes on on the other members).
constexpr int kExitDeposed = 6;  // docs/usage.md "Exit codes"
[[noreturn]] void LeaveDeposed(const std::string& job, const std::string& why, AttachService& attach, LogMux& mux,
                               TerminalWriter& err, const std::vector<std::string>& own_files,
                               ReplicaMemberRun* member) {
  attach.RemoveFile();
  if (member) member->Abandon();
  std::error_code ec;
  for (const std::string& f : own_files)
    if (!f.empty()) std::filesystem::remove_all(f, ec);
  mux.Notice(fmt::format("dslaunch: coordinator: no longer the leader of job {}: {}. This dslaunch lost its etcd "
                         "lease (a partition?); it leaves every process of the job to whoever leads it now{} and "
                         "exits 6. `dslaunch attach {}` follows the job",
                         job, why, member ? " (its etcd member and the member's files went)" : "", job));
  mux.Flush();
  err.Flush();
  std::_Exit(kExitDeposed);
}

// A member of the job's etcd unanswered this long (or 3 heartbeat timeouts) is lost.
constexpr double kMemberLostAfter = 5;

// Runs the prepared job to its end; returns the coordinator's world size.
// `own_files` and `member` (a standby's, or null): what this dslaunch alone
// uses, for LeaveDeposed.
Result<int> Supervise(Launch& l, const CliOptions& cli, JobRecord& record, LogMux& mux, TerminalWriter& err,
                      const std::vector<std::string>& own_files, ReplicaMemberRun* member, const failover::JobCa* ca) {
  asio::io_context io;
  // While the io thread runs, dslaunch's own lines go through the LogMux too.
  l.coord.notice = [&mux](const std::string& text) { mux.Notice("dslaunch: " + text); };
  Coordinator coord(io, l.plan, l.coord, record);
  const bool resume = !cli.resume_job.empty();
  const double grace = CoordinatorGrace(l.plan.job.coordinator, l.coord.heartbeat_timeout);
  if (!resume) {
    if (Status st = coord.Listen(); !st.ok()) return Status::Unavailable(st.message());
  }
  // Taking over: leading first (the agents dial this address: it was the
  // lost coordinator's), then its port.
  DS_ASSIGN_OR_RETURN(std::unique_ptr<failover::LeaderSession> leader,
                      !resume       ? LeadJob(l.plan.job, l.coord.job_id, coord.address())
                      : cli.standby ? LeadJobAsStandby(l.plan.job, l.coord.job_id, coord.address(),
                                                       [over = JobOver(l.plan.job, l.coord.job_id, grace)]() mutable {
                                                         return StandbyStopAsked() || over();
                                                       })
                                    : LeadJobWhenFree(l.plan.job, l.coord.job_id, coord.address(), grace));
  if (resume && !leader)  // a standby whose job ended under another standby
    return Status::Aborted(fmt::format("standby: job {} ended under another leader; nothing to take over",
                                       l.coord.job_id));
  if (resume) {
    DS_RETURN_IF_ERROR(ListenWhereTheLostOneDid(coord));
    if (cli.standby_index >= 0) WithdrawStandby(l.plan.job, l.coord.job_id, cli.standby_index);  // it leads now
    // The newest state, now that this coordinator leads and nobody else can write it.
    Result<JobState> s = ReadJobStateWithin(l.plan.job, l.coord.job_id, grace);
    if (!s.ok()) return Status::Unavailable(s.status().message());
    if (Status st = coord.Adopt(*s); !st.ok()) return Status::InvalidArgument("--resume: " + st.message());
    l.coord.notice(fmt::format("taking over job {} at generation {} ({}): waiting for its agents", l.coord.job_id,
                               s->generation, CoordStateName(s->phase)));
  }
  if (leader) {
    l.coord.notice(fmt::format("coordinator: leads job {} in etcd ({}, fencing token {}); its state is written "
                               "there at every transition",
                               l.coord.job_id, fmt::join(l.plan.job.coordinator.etcd, ", "), leader->token()));
    if (Status st = WriteTakeoverRecord(l.coord.job_id, {l.coord.secret, coord.address()}); !st.ok())
      l.coord.notice("warning: no takeover record (dslaunch --resume cannot take this job over): " + st.message());
    coord.OnStateChange([&leader](const JobState& s) { leader->Offer(EncodeJobState(s, RealClock().Now())); });
    coord.SetFencing([&leader] { return leader->Leads() ? static_cast<uint64_t>(leader->token()) : 0; },
                     [&leader] { return leader->ConfirmedAt(); });
  }
  AttachService attach(coord, record, mux, l.coord.secret,
                       resume ? fmt::format("this coordinator took job {} over from a lost one", l.coord.job_id) : "");
  if (leader) {
    leader->OnDeposed([&](const std::string& why) {
      asio::post(io, [&, why] { LeaveDeposed(l.coord.job_id, why, attach, mux, err, own_files, member); });
    });
  }
  JobWatch watch(io, coord, record, mux,
                 {l.plan.job.progress_interval, l.plan.job.metrics_port, l.plan.job.metrics_addr});
  watch.FeedStatus(&attach.hub());
  if (Status st = watch.Start(); !st.ok())  // a bad --metrics-addr is an input error (exit 2)
    return st.code() == Status::Code::kInvalidArgument ? st : Status::Unavailable(st.message());
  DiagnosticsThroughMux diagnostics(io, mux, err);
  std::unique_ptr<LoopbackSecret> published;
  DS_ASSIGN_OR_RETURN(FleetOptions fleet_options, FleetOptionsFor(l, cli, published));
  AgentFleet fleet(io, coord, *l.spawner, AgentSpecs(l, cli, coord.address()), std::move(fleet_options));

  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  StopOnSignals(signals, coord, leader != nullptr, l.coord.notice);
  StdinLifeline lifeline(io, coord, mux);
  if (cli.stdin_lifeline) DS_RETURN_IF_ERROR(lifeline.Watch());

  std::unique_ptr<MemberKeeper> keeper;  // below; it changes no member once the job is over
  coord.OnDone([&] {
    if (keeper) keeper->RequestStop();
    attach.End();  // written while the fleet drains
    watch.Stop();
    lifeline.Close();
    fleet.Drain(Seconds(l.coord.stop_grace + 3.0));
  });
  coord.Start(fleet);  // the coordinator tells the fleet of agents registered and lost
  if (resume) {  // the agents run already: each registers again with the key it holds
    for (const AgentSpec& s : AgentSpecs(l, cli, coord.address()))
      coord.EnrollAgent(s.node_index, FailoverAgentToken(l.coord.secret, l.coord.job_id, s.node_index));
  } else {
    fleet.Start();
  }
  // Standby coordinators: started (unless this one took over), and every
  // agent told where they are as they announce themselves.
  std::unique_ptr<StandbyWatch> standby_watch;
  std::vector<std::unique_ptr<AgentHandle>> standbys;  // ended with the job (they see it end anyway)
  std::thread standby_start;
  if (leader && l.plan.job.coordinator.standbys > 0) {
    auto w = StandbyWatch::Start(l.plan.job, l.coord.job_id,
                                 [&io, &coord, &l, &attach, self = coord.address()](std::vector<std::string> standbys) {
      std::vector<std::string> addresses = standbys;
      addresses.insert(addresses.begin(), self);
      asio::post(io, [&coord, &l, &attach, addresses, standbys] {
        coord.SetCoordinators(addresses);
        attach.SetCoordinators(addresses);
        if (!standbys.empty())
          l.coord.notice(fmt::format("coordinator.standbys: the agents know where the standbys wait: {}",
                                     fmt::join(standbys, ", ")));
      });
    });
    if (w.ok()) standby_watch = std::move(w).value();
    else l.coord.notice("coordinator.standbys: the agents are not told where the standbys are: " + w.status().message());
    auto notice = [&io, &l](const std::string& line) { asio::post(io, [&l, line] { l.coord.notice(line); }); };
    if (!resume && l.plan.job.coordinator.replicas == 0)  // the replicas' standbys run already (job_replicas.h)
      standby_start = std::thread([&, notice] {
        standbys = StartStandbys({l.launcher, l.plan, l.ssh, cli, l.coord.job_id, l.coord.secret}, notice);
      });
  }
  // coordinator.replicas: whoever leads keeps the job's etcd at its members (member_keeper.h).
  if (leader && ca) {
    MemberKeeperOptions ko;
    ko.job = l.plan.job;
    ko.job_id = l.coord.job_id;
    ko.ca = ca;
    ko.hosts = Candidates(l.plan);
    ko.replicas = l.plan.job.coordinator.replicas;
    ko.lost_after_s = std::max(kMemberLostAfter, 3 * l.coord.heartbeat_timeout);
    ko.start = [&](const NodePlan& host, int index, const std::string& brief) {
      return StartStandbyOn({l.launcher, l.plan, l.ssh, cli, l.coord.job_id, l.coord.secret}, host, index, brief);
    };
    ko.notice = [&io, &l](const std::string& line) { asio::post(io, [&l, line] { l.coord.notice(line); }); };
    keeper = MemberKeeper::Start(std::move(ko));
  }
  io.run();
  if (standby_start.joinable()) standby_start.join();
  standby_watch.reset();
  LogSetSink([&err](std::string line) { err.Write(std::move(line)); });
  io.restart();
  io.poll();  // the diagnostics posted while the loop ended
  if (leader) {  // the last state (the job's end) before the lease goes
    if (Status st = leader->Flush(3); !st.ok()) DS_LOG(Warn, Coord) << st.message();
    RemoveTakeoverRecord(l.coord.job_id);  // before the key goes: a standby sees the job ended, not its leader lost
    if (l.plan.job.coordinator.standbys > 0) WithdrawStandby(l.plan.job, l.coord.job_id, -1);
    leader->Stop();
  }
  keeper.reset();  // after the job's end is written: its standbys see it and go
  return coord.control().world_size();
}

}  // namespace

bool SummaryInColor(const std::string& mode, bool stderr_is_tty) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  return stderr_is_tty;
}

Result<int> RunJob(const LaunchPlan& plan_in, const CliOptions& cli, const PerNodeLaunch* per_node) {
  // A closed stdout (`dslaunch ... | head`) must not kill the launcher and,
  // through the lost coordinator, the job: writes just fail.
  ::signal(SIGPIPE, SIG_IGN);
  // --save_pid: the file exists while the job runs; `pid_file` removes it on
  // every return below (a signal ends the job through RequestStop, so Ctrl-C
  // returns here too).
  PidFile pid_file;
  if (cli.save_pid) {
    DS_ASSIGN_OR_RETURN(pid_file, PidFile::Create(PidFile::DefaultPath(), ::getpid()));
  }
  if (cli.standby) {
    DS_RETURN_IF_ERROR(CheckJobId(cli.resume_job));
    CatchStandbyStop();
  }
  LaunchPlan plan = plan_in;
  // coordinator.replicas: a standby the leader started runs its member of
  // the job's etcd first (job_replicas.h); from then on the job's etcd is
  // the members', as a site's would be.
  std::unique_ptr<ReplicaMemberRun> member;
  if (cli.standby && cli.standby_index >= 0 && plan.job.coordinator.replicas > 0) {
    DS_ASSIGN_OR_RETURN(member, RunReplicaMember(plan.job, cli.resume_job, ReadStandbyInput().brief));
  }
  Result<Launch> prepared = PrepareLaunch(plan, cli, per_node);
  if (!prepared.ok() && cli.standby && prepared.status().code() == Status::Code::kNotFound) {
    std::cerr << "dslaunch: standby: " << prepared.status().message() << "; nothing to take over\n";
    return 0;  // no takeover record: the job is not running from this host
  }
  DS_ASSIGN_OR_RETURN(Launch l, std::move(prepared));
  std::unique_ptr<ReplicaCluster> replicas;  // the leading run's standbys and their members
  if (!cli.standby && cli.resume_job.empty() && l.plan.job.coordinator.replicas > 0) {
    DS_ASSIGN_OR_RETURN(replicas, StartReplicas(l.plan, l.launcher, l.ssh, cli, l.coord.job_id, l.coord.secret));
  }
  if (cli.standby) {
    DS_ASSIGN_OR_RETURN(bool take_over, WaitAsStandby(l.plan.job, cli.standby_index, l.coord));
    if (!take_over) return 0;
  }
  if (l.plan.job.pty) l.plan.job.pty_window = PtyWindowHere(l.plan);
  LogMuxOptions mux_options{l.plan.job.log_dir, cli.color, stdout, ::isatty(STDOUT_FILENO) != 0};
  mux_options.err_is_tty = ::isatty(STDERR_FILENO) != 0;
  mux_options.status_line = true;  // on a terminal stderr (JobWatch)
  mux_options.terminal_local_ranks = cli.local_ranks_filter;
  mux_options.redirects = cli.redirects;
  if (mux_options.log_dir.empty() && (cli.redirects.any() || cli.tee)) {
    // torchrun's way: -r/-t without a log dir write into a fresh one.
    DS_ASSIGN_OR_RETURN(mux_options.log_dir, FreshLogDir());
    std::cerr << "dslaunch: " << cli.streams_flag << ": per-rank files in " << mux_options.log_dir << "\n";
  }
  LogMux mux(std::move(mux_options));
  if (Status st = mux.Open(); !st.ok()) return Status::InvalidArgument(st.message());
  JobRecord record(&mux);
  // dslaunch's own lines (notices, diagnostics) are written by a thread too:
  // a stalled terminal (Ctrl-S) must not block the event loop.
  TerminalWriter err(stderr, kStderrQueueBytes, "diagnostics only, the job goes on");
  LogSetSink([&err](std::string line) { err.Write(std::move(line)); });
  const failover::JobCa* ca = replicas && replicas->ca ? &*replicas->ca : member && member->ca ? &*member->ca : nullptr;
  Result<int> world_size = Supervise(l, cli, record, mux, err, {pid_file.path(), replicas ? replicas->tls_dir : ""},
                                     member.get(), ca);
  LogSetSink(nullptr);
  err.Flush();
  if (!world_size.ok() && cli.standby && world_size.status().code() == Status::Code::kAborted) {
    std::cerr << "dslaunch: " << world_size.status().message() << "\n";
    return 0;
  }
  if (!world_size.ok()) return world_size.status();
  mux.Flush();
  std::cerr << FormatSummary(record, *world_size, SummaryInColor(cli.color, ::isatty(STDERR_FILENO) != 0));
  return record.ExitCode();
}

}  // namespace ds
