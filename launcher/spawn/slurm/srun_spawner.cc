#include "launcher/spawn/slurm/srun_spawner.h"

#include <signal.h>

#include <cstring>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "launcher/spawn/step_command.h"
#include "launcher/spawn/tool_group.h"

namespace ds {
namespace {

// The signal names srun prints (strsignal) for a task killed by one.
int SignalExit(const std::string& name) {
  static const std::pair<const char*, int> kNames[] = {
      {"Killed", SIGKILL}, {"Terminated", SIGTERM}, {"Interrupt", SIGINT}, {"Hangup", SIGHUP},
      {"Aborted", SIGABRT}, {"Segmentation fault", SIGSEGV}, {"Bus error", SIGBUS}};
  for (const auto& [n, sig] : kNames)
    if (StartsWith(name, n)) return 128 + sig;  // "Segmentation fault (core dumped)"
  return -1;
}

}  // namespace

bool SrunHostEnded(bool is_err, const std::string& line, std::string* host, int* exit) {
  if (!is_err || !StartsWith(line, "srun: ")) return false;
  std::string rest = line.substr(6);
  for (const char* p : {"error: ", "launch/slurm: _task_finish: "})  // 22.05: errors, and --verbose's function
    if (StartsWith(rest, p)) rest = rest.substr(std::strlen(p));
  // "Node failure on HOST"
  if (StartsWith(rest, "Node failure on ")) {
    *host = rest.substr(16);
    *exit = -1;
    return true;
  }
  // "Task launch for StepId=...: failed on node HOST: reason"
  if (const size_t at = rest.find("failed on node "); StartsWith(rest, "Task launch for ") && at != std::string::npos) {
    const std::string tail = rest.substr(at + 15);
    *host = tail.substr(0, tail.find(':'));
    *exit = -1;
    return true;
  }
  // "HOST: task 1: Exited with exit code 3" / "HOST: task 1: Killed"
  const size_t a = rest.find(": task");
  if (a == std::string::npos) return false;
  const size_t b = rest.find(": ", a + 2);
  if (b == std::string::npos) return false;
  *host = rest.substr(0, a);
  const std::string what = rest.substr(b + 2), tag = "Exited with exit code ";
  if (what == "Completed") *exit = 0;  // srun -v
  else if (StartsWith(what, tag)) *exit = static_cast<int>(ParseInt(what.substr(tag.size())).value_or(-1));
  else *exit = SignalExit(what);
  return true;
}

std::vector<std::string> SrunArgv(const SrunOptions& o, const std::vector<AgentSpec>& specs,
                                  const std::vector<std::string>& agent_argv) {
  std::string nodes;
  for (const AgentSpec& s : specs) nodes += (nodes.empty() ? "" : ",") + s.host;
  const std::string n = std::to_string(specs.size());
  std::vector<std::string> argv = {o.srun_path, "--verbose", "--job-name=dsagent", "--nodes=" + n, "--ntasks=" + n,
                                   "--ntasks-per-node=1", "--nodelist=" + nodes, "--input=all", "--overlap",
                                   "--cpu-bind=none"};
  if (o.elastic) argv.insert(argv.end(), {"--no-kill", "--kill-on-bad-exit=0"});
  else argv.push_back("--kill-on-bad-exit=1");
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  argv.insert(argv.end(), agent_argv.begin(), agent_argv.end());
  return argv;
}

Result<ToolGroupSpec> SrunSpawner::Prepare(const std::vector<AgentSpec>& specs) const {
  auto srun = FindExecutable(options_.srun_path);
  if (!srun.ok())
    return Status::NotFound(fmt::format(
        "--launcher slurm: srun not found ({}); run dslaunch inside a Slurm allocation (sbatch, salloc) on a "
        "node with Slurm's client commands",
        srun.status().message()));
  for (const AgentSpec& s : specs)
    if (s.stdin_payload != specs[0].stdin_payload)
      return Status::InvalidArgument("the agents of one srun step must share their stdin payload");
  DS_ASSIGN_OR_RETURN(std::vector<std::string> agent, StepAgentArgv(specs, "SLURMD_NODENAME"));
  SrunOptions o = options_;
  o.srun_path = *srun;
  ToolGroupSpec tool{.tool = "srun", .path = *srun, .argv = SrunArgv(o, specs, agent), .env = {},
                     .stdin_data = specs[0].stdin_payload + "\n", .hosts = {}, .grace = options_.stop_grace,
                     .host_ended = SrunHostEnded,
                     // --verbose's chatter; errors stay warnings.
                     .benign = [](const std::string& l) { return !StartsWith(l, "srun: error: "); },
                     .stop_host = nullptr};
  for (const AgentSpec& s : specs) tool.hosts.push_back(s.host);
  DS_LOG(Info, Agent) << "srun: one step for " << specs.size() << " agents";
  return tool;
}

std::vector<Result<std::unique_ptr<AgentHandle>>> SrunSpawner::Start(const std::vector<AgentSpec>& specs) {
  if (specs.empty()) return {};
  return StartForSpecs(specs, Prepare(specs));
}

}  // namespace ds
