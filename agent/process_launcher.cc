#include "agent/process_launcher.h"

#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "agent/node_env.h"
#include "agent/workers/control_channel.h"
#include "agent/workers/core_binding.h"
#include "agent/workers/descendants.h"
#include "wire/port_hold.h"
#include "agent/python_path.h"
#include "common/cpu_binding.h"
#include "common/env_registry.h"
#include "common/log.h"
#include "common/netif.h"
#include "common/strings.h"

namespace ds {

ProcessLauncher::ProcessLauncher(std::string host, bool step_agent, const ChildAgents& tree)
    : host_(std::move(host)), step_agent_(step_agent), tree_(tree) {}

ProcessLauncher::~ProcessLauncher() {
  for (auto& w : workers_)
    if (w.proc && !w.proc->exited) w.proc->SignalGroup(SIGKILL);
}

Result<uint32_t> ProcessLauncher::HoldPort(uint32_t port) {
  relay_.reset();  // the previous generation's: its port may be the one asked for
  // The wildcard address: the hold then conflicts with a bind of the port on
  // any local address, which is what the workers' later bind will need.
  DS_ASSIGN_OR_RETURN(auto held, ds::HoldPort("0.0.0.0", static_cast<int>(port)));
  held_port_ = std::move(held.first);
  port_given_ = port != 0;
  return static_cast<uint32_t>(held.second);
}

void ProcessLauncher::ReleasePort() {
  held_port_.Reset();
  relay_.reset();
}

namespace {

// DSLAUNCH_STORE_RELAY as the worker `spec` would see it: the Assign's
// (job file env:, forwarded variables) over the agent's own.
bool RelayWanted(const msg::WorkerSpec& spec) {
  std::optional<std::string> v = EnvRaw("DSLAUNCH_STORE_RELAY");
  for (const auto& [k, val] : spec.env)
    if (k == "DSLAUNCH_STORE_RELAY") v = val;
  return !v || !(*v == "0" || *v == "false" || *v == "no" || *v == "off");
}

// DSLAUNCH_PYTHON_PACKAGE as worker `spec` would see it (as RelayWanted).
bool PythonPackageWanted(const msg::WorkerSpec& spec) {
  std::optional<std::string> v = EnvRaw("DSLAUNCH_PYTHON_PACKAGE");
  for (const auto& [k, val] : spec.env)
    if (k == "DSLAUNCH_PYTHON_PACKAGE") v = val;
  return !v || !(*v == "0" || *v == "false" || *v == "no" || *v == "off");
}

// Clients the relay lets wait for rank 0's store: every rank's store
// client, a few times over (torch reconnects), and no more for anyone else.
size_t MaxWaitingClients(const msg::WorkerSpec& rank0) {
  for (const auto& [k, v] : rank0.env)
    if (k == "WORLD_SIZE")
      if (auto n = ParseInt(v); n && *n > 0) return static_cast<size_t>(4 * *n + 16);
  return StoreRelayOptions{}.max_waiting;
}

}  // namespace

int ProcessLauncher::StartRelay(const msg::Assign& m) {
  relay_.reset();
  if (held_port_.get() < 0) return 0;
  auto rank0 = std::find_if(m.workers.begin(), m.workers.end(), [](const auto& w) { return w.rank == 0; });
  if (rank0 == m.workers.end() || !RelayWanted(*rank0)) return 0;
  if (port_given_) {  // torchrun's contract: the port the user gave is every rank's, rank 0's included
    DS_LOG(Info, Agent) << "no store relay: MASTER_PORT was given (--master_port, network.master_port), "
                           "so rank 0's store listens on it itself";
    return 0;
  }
  // Rank 0's own port: held like MASTER_PORT, released just before it starts.
  auto upstream = ds::HoldPort("0.0.0.0", 0);
  if (!upstream.ok()) {
    DS_LOG(Warn, Agent) << "no store relay: " << upstream.status().message();
    return 0;
  }
  StoreRelayOptions o;
  o.upstream_port = upstream->second;
  o.max_waiting = MaxWaitingClients(*rank0);
  in_addr numeric{};  // a rank 0 that binds (MASTER_ADDR, MASTER_PORT) itself listens there, not on the loopback
  if (m.master_addr != "127.0.0.1" && ::inet_pton(AF_INET, m.master_addr.c_str(), &numeric) == 1)
    o.upstream_hosts.push_back(m.master_addr);
  auto relay = StoreRelay::Start(std::move(held_port_), o);
  if (!relay.ok()) {
    DS_LOG(Warn, Agent) << "no store relay: " << relay.status().message();
    return 0;
  }
  relay_ = std::move(relay).value();
  DS_LOG(Info, Agent) << "store relay: MASTER_PORT relayed to rank 0's store on port " << o.upstream_port;
  return o.upstream_port;
}

std::vector<WorkerStart> ProcessLauncher::StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                                       const std::string& snapshot_dir) {
  workers_.clear();  // the previous generation's, all reaped (or SIGKILLed now)
  return Spawn(m, beat_tokens, snapshot_dir, /*spares=*/true);
}

// A replacement rank of a generation reshaped in place: the running workers,
// the relay and the spares stay as they are.
std::vector<WorkerStart> ProcessLauncher::AddWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                                     const std::string& snapshot_dir) {
  return Spawn(m, beat_tokens, snapshot_dir, /*spares=*/false);
}

std::vector<WorkerStart> ProcessLauncher::Spawn(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                                const std::string& snapshot_dir, bool spares) {
  std::string ifname;
  if (!m.master_addr.empty()) {
    auto route = RouteTo(m.master_addr);
    if (route.ok()) ifname = route->ifname;
  }
  // The cores of each local rank, known before any fork (core_binding.h).
  auto cores = PlanCores(m);
  if (spares) {
    store_port_ = StartRelay(m);
    held_port_.Reset();  // without the relay, release MASTER_PORT just before the workers start
  }
  std::vector<WorkerStart> out;
  std::vector<std::optional<WorkerLaunch>> launched;  // what each started worker runs, for its spare
  for (size_t i = 0; i < m.workers.size(); ++i) {
    launched.emplace_back();
    Worker w;
    w.rank = m.workers[i].rank;
    if (!cores.ok()) {
      out.push_back({-1, fmt::format("dsagent: host {}: {}", host_, cores.status().message())});
      continue;
    }
    auto error_file = error_files_.Prepare(m.generation, w.rank);
    if (error_file.ok()) w.error_file = *error_file;
    else
      DS_LOG(Warn, Proc) << "rank " << w.rank << " runs without TORCHELASTIC_ERROR_FILE: "
                         << error_file.status().message();
    const std::vector<int> none;
    WorkerLaunch launch = BuildLaunch(m, i, w, i < cores->size() ? (*cores)[i] : none, beat_tokens.at(i),
                                      snapshot_dir, ifname);
    std::unique_ptr<WorkerProcess> warm = spares ? spares_.Take(i, launch) : nullptr;
    auto proc = warm ? Result<std::unique_ptr<WorkerProcess>>(std::move(warm)) : WorkerProcess::Start(launch);
    if (!proc.ok()) {
      out.push_back({-1, "dsagent: " + proc.status().message()});
      continue;
    }
    w.proc = std::move(proc).value();
    out.push_back({w.proc->pid(), ""});
    workers_.push_back(std::move(w));
    launched.back() = std::move(launch);
  }
  if (spares) spares_.Refill(launched, m.preload);  // for the next generation, now that this one runs
  return out;
}

Result<std::vector<std::vector<int>>> ProcessLauncher::PlanCores(const msg::Assign& m) const {
  if (!m.bind_cores) return std::vector<std::vector<int>>{};
  // Each rank's CUDA_VISIBLE_DEVICES as it will see it: the Assign's, else the one we inherited.
  std::vector<std::optional<std::string>> visible;
  for (const msg::WorkerSpec& w : m.workers) {
    std::optional<std::string> v = EnvRaw("CUDA_VISIBLE_DEVICES");
    for (const auto& [k, val] : w.env)
      if (k == "CUDA_VISIBLE_DEVICES") v = val;
    visible.push_back(std::move(v));
  }
  DS_ASSIGN_OR_RETURN(auto planned, PlanCoreBinding(m.core_list, static_cast<int>(m.workers.size()), AllowedCpus(),
                                                    NumaNodeCpus(), LocalRankGpuNuma(GpuNumaNodes(), visible)));
  if (!planned.note.empty()) DS_LOG(Info, Agent) << "bind_cores_to_rank: " << planned.note;
  return std::move(planned.cores);
}

WorkerLaunch ProcessLauncher::BuildLaunch(const msg::Assign& m, size_t i, const Worker& w, const std::vector<int>& cpus,
                                          const std::string& token, const std::string& snapshot_dir,
                                          const std::string& ifname) const {
  const msg::WorkerSpec& spec = m.workers[i];
  WorkerLaunch launch;
  launch.argv = m.argv;
  if (m.local_rank_arg) {  // DeepSpeed's spelling and place: right after the script, before the user's arguments
    const bool inside = m.local_rank_at >= 0 && static_cast<size_t>(m.local_rank_at) <= launch.argv.size();
    launch.argv.insert(inside ? launch.argv.begin() + m.local_rank_at : launch.argv.end(),
                       fmt::format("--local_rank={}", spec.local_rank));
  }
  launch.cpus = cpus;
  const int omp = m.omp_from_binding && !launch.cpus.empty() ? static_cast<int>(launch.cpus.size()) : 0;
  launch.env = Environment(spec, w, token, snapshot_dir, ifname, omp);
  launch.working_dir = m.working_dir;
  // The coordinator asks for a control channel (in-place recovery) by
  // naming DSLAUNCH_CONTROL_FD; its value is ours. A warm spare (python:
  // preload) has none to adopt: such a job keeps the full restart.
  const bool asked = std::any_of(spec.env.begin(), spec.env.end(),
                                 [](const auto& kv) { return kv.first == "DSLAUNCH_CONTROL_FD"; });
  launch.control = asked && m.preload.empty();
  std::erase_if(launch.env, [](const auto& kv) { return kv.first == "DSLAUNCH_CONTROL_FD"; });  // ours or none
  if (launch.control) launch.env.emplace_back("DSLAUNCH_CONTROL_FD", std::to_string(kControlFd));
  if (m.pty_columns > 0)
    launch.pty = WorkerLaunch::PtySize{static_cast<uint16_t>(std::min<uint32_t>(m.pty_columns, UINT16_MAX)),
                                       static_cast<uint16_t>(std::min<uint32_t>(m.pty_rows, UINT16_MAX))};
  return launch;
}

KeyValues ProcessLauncher::Environment(const msg::WorkerSpec& spec, const Worker& w, const std::string& token,
                                       const std::string& snapshot_dir, const std::string& ifname,
                                       int omp_threads) const {
  NodeEnvInputs in;
  in.inherited = ProcessEnvironment();
  in.drop_step_variables = step_agent_;
  in.assigned = spec.env;
  in.heartbeat_token = token;
  in.snapshot_dir = snapshot_dir;
  in.error_file = w.error_file;
  in.omp_threads = omp_threads;
  in.rank0_store_port = w.rank == 0 ? store_port_ : 0;
  if (PythonPackageWanted(spec)) in.python_dir = OwnDslaunchPythonDir();
  in.ifname = ifname;
  return NodeWorkerEnv(in);
}

void ProcessLauncher::SignalGroup(int rank, int sig) {
  for (auto& w : workers_)
    if (w.rank == rank && w.proc && !w.proc->exited) w.proc->SignalGroup(sig);
}

int ProcessLauncher::KillLeftovers() {
  std::set<pid_t> spared = tree_.pids();
  spared.merge(spares_.pids());  // waiting for the next generation
  return KillDescendants(spared);
}

// Each running worker takes its new rank; one that has none in the new
// world is SIGKILLed, and its end, reported as rank -1, concerns nobody.
void ProcessLauncher::Renumber(const std::vector<msg::RankMove>& moves) {
  for (auto& w : workers_) {
    if (!w.proc || w.proc->exited || w.rank < 0) continue;
    auto move = std::find_if(moves.begin(), moves.end(), [&](const auto& mv) { return mv.old_rank == w.rank; });
    w.rank = move == moves.end() ? -1 : std::max(move->new_rank, -1);
    if (w.rank < 0) w.proc->SignalGroup(SIGKILL);
  }
}

Status ProcessLauncher::SendControl(int rank, const msg::WorkerReshape& m) {
  for (auto& w : workers_) {
    if (w.rank != rank || !w.proc || w.proc->exited) continue;
    if (w.proc->control_fd() < 0) return Status::Unavailable("it has no control channel");
    return SendControlFrame(w.proc->control_fd(), wire::MsgType::kWorkerReshape, m.Encode());
  }
  return Status::NotFound("it is not running on this node");
}

bool ProcessLauncher::OnControlReadable(int fd, const ControlSink& sink) {
  for (auto& w : workers_) {
    if (fd < 0 || fd != w.proc->control_fd()) continue;
    while (w.proc->control_fd() >= 0) {
      auto f = ReadControlFrame(fd);
      if (f.ok() && !*f) break;  // nothing more waiting
      if (f.ok()) {
        sink(w.rank, **f);
        continue;
      }
      DS_LOG(Info, Proc) << "rank " << w.rank << ": " << f.status().message() << "; closing it";
      w.proc->CloseControl();
    }
    return true;
  }
  return false;
}

void ProcessLauncher::AddControlFds(std::vector<pollfd>* fds) const {
  for (const auto& w : workers_)
    if (w.proc->control_fd() >= 0) fds->push_back({w.proc->control_fd(), POLLIN, 0});
}

void ProcessLauncher::AddPollFds(std::vector<pollfd>* fds) const {
  spares_.AddPollFds(fds);
  for (const auto& w : workers_) {
    if (w.proc->stdout_fd() >= 0) fds->push_back({w.proc->stdout_fd(), POLLIN, 0});
    if (w.proc->stderr_fd() >= 0) fds->push_back({w.proc->stderr_fd(), POLLIN, 0});
  }
}

bool ProcessLauncher::OnReadable(int fd, const LineSink& sink) {
  if (spares_.OnReadable(fd)) return true;
  for (auto& w : workers_) {
    if (fd != w.proc->stdout_fd() && fd != w.proc->stderr_fd()) continue;
    // Bounded: one busy pipe cannot keep the loop from the others, the
    // coordinator, signals and timers.
    const int rank = w.rank;
    w.proc->ReadPipe(fd, [&](int stream, const std::string& line) { sink(rank, stream, line); }, kPipeReadPerWake);
    return true;
  }
  return false;
}

void ProcessLauncher::BeforeReap(pid_t pid) {
  for (auto& w : workers_)
    if (w.proc->pid() == pid) w.proc->SignalGroup(SIGKILL);
}

std::optional<WorkerExit> ProcessLauncher::OnReaped(pid_t pid, int status, const LineSink& sink) {
  if (spares_.OnReaped(pid, status)) return std::nullopt;
  for (auto& w : workers_) {
    if (w.proc->pid() != pid) continue;
    w.proc->exited = true;
    if (WIFSIGNALED(status)) w.proc->term_signal = WTERMSIG(status);
    else w.proc->exit_code = WEXITSTATUS(status);
    const int rank = w.rank;
    w.proc->DrainAndClose([&](int stream, const std::string& line) { sink(rank, stream, line); });
    WorkerExit e{rank, pid, w.proc->exit_code, w.proc->term_signal, std::nullopt};
    if (!w.error_file.empty()) {
      e.error = ReadWorkerErrorFile(w.error_file, ::geteuid());
      ::unlink(w.error_file.c_str());  // read once; a restart's worker gets a fresh name anyway
      if (e.error) e.error = BoundForWire(std::move(*e.error));
    }
    return e;
  }
  return std::nullopt;
}

}  // namespace ds
