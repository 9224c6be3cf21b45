#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

#include "agent/agent_args.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace ds {

std::string AgentUsage() {
  return "usage: dsagent --coordinator HOST:PORT --node-index N --job-id ID [--bind ADDR] [--host NAME]\n"
         "               [--heartbeat-interval S] [--heartbeat-timeout S] [--connect-timeout S] [--join-timeout S]\n"
         "               [--coordinator-grace S] [--tree-parent N]\n"
         "       dsagent --step-nodes I=HOST,... --step-identity VAR ... (instead of --node-index and --host)\n"
         "The agent token (its key) is read from --secret-file PATH when that is a private file (0600) of\n"
         "this user, else from stdin (first line) or DSLAUNCH_SECRET_FD.\n";
}

Result<AgentOptions> ParseAgentArgs(const std::vector<std::string>& args) {
  AgentOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return Status::InvalidArgument(fmt::format("{}: expected a value", flag));
    const std::string& v = args[++i];
    auto seconds = [&](double* out) -> Status {
      auto s = ParseSeconds(v);
      if (!s || *s <= 0) return Status::InvalidArgument(fmt::format("{}: expected a duration, got '{}'", flag, v));
      *out = *s;
      return Status::OK();
    };
    if (flag == "--coordinator") o.coordinator = v;
    else if (flag == "--job-id") o.job_id = v;
    else if (flag == "--bind") o.bind_addr = v;
    else if (flag == "--host") o.host = v;
    else if (flag == "--node-index") {
      auto n = ParseInt(v);
      if (!n || *n < 0)
        return Status::InvalidArgument(fmt::format("--node-index: expected a non-negative integer, got '{}'", v));
      o.node_index = static_cast<int>(*n);
    } else if (flag == "--tree-parent") {
      auto n = ParseInt(v);
      if (!n || *n < 0)
        return Status::InvalidArgument(fmt::format("--tree-parent: expected a node index, got '{}'", v));
      o.tree_parent = static_cast<int>(*n);
    } else if (flag == "--secret-file") {
      o.secret_file = v;
    } else if (flag == "--secret-via-pmi") {
      if (v != "1")
        return Status::InvalidArgument(fmt::format("--secret-via-pmi: expected 1, got '{}'", v));
      o.secret_via_pmi = true;
    } else if (flag == "--step-identity") {
      o.step_identity = v;
    } else if (flag == "--step-nodes") {
      for (const std::string& item : Split(v, ',')) {
        const size_t eq = item.find('=');
        auto n = eq == std::string::npos ? std::nullopt : ParseInt(item.substr(0, eq));
        if (!n || *n < 0 || eq + 1 >= item.size())
          return Status::InvalidArgument(
              fmt::format("--step-nodes: expected INDEX=HOST[,INDEX=HOST...], got '{}' in '{}'", item, v));
        o.step_nodes.emplace_back(static_cast<int>(*n), item.substr(eq + 1));
      }
    } else if (flag == "--heartbeat-interval") DS_RETURN_IF_ERROR(seconds(&o.heartbeat_interval));
    else if (flag == "--heartbeat-timeout") DS_RETURN_IF_ERROR(seconds(&o.heartbeat_timeout));
    else if (flag == "--connect-timeout") DS_RETURN_IF_ERROR(seconds(&o.connect_timeout));
    else if (flag == "--join-timeout") DS_RETURN_IF_ERROR(seconds(&o.join_timeout));
    else if (flag == "--coordinator-grace") DS_RETURN_IF_ERROR(seconds(&o.coordinator_grace));
    else return Status::InvalidArgument(fmt::format("unknown option '{}'", flag));
  }
  if (o.coordinator.empty()) return Status::InvalidArgument("--coordinator is required");
  if (o.step_nodes.empty() != o.step_identity.empty())
    return Status::InvalidArgument("--step-nodes and --step-identity go together");
  if (!o.step_nodes.empty()) {
    if (o.node_index >= 0 || !o.host.empty())
      return Status::InvalidArgument("--step-nodes replaces --node-index and --host: give one or the other");
    DS_RETURN_IF_ERROR(ResolveStepNode(o, GetAnyEnv(o.step_identity)));
  }
  if (o.node_index < 0) return Status::InvalidArgument("--node-index is required");
  if (o.job_id.empty()) return Status::InvalidArgument("--job-id is required");
  return o;
}

Status ResolveStepNode(AgentOptions& o, const std::optional<std::string>& identity) {
  const std::string& var = o.step_identity;
  if (!identity || identity->empty())
    return Status::InvalidArgument(fmt::format(
        "--step-identity {}: the variable is not set; this agent was not started by the step launcher it "
        "expects (srun sets SLURMD_NODENAME, mpirun OMPI_COMM_WORLD_RANK, mpiexec PMI_RANK)", var));
  const std::string& v = *identity;
  if (auto rank = ParseInt(v)) {
    if (*rank < 0 || *rank >= static_cast<int64_t>(o.step_nodes.size()))
      return Status::InvalidArgument(fmt::format("--step-identity {}={}: expected a task rank below {} (one task per node)",
                                                 var, v, o.step_nodes.size()));
    std::tie(o.node_index, o.host) = o.step_nodes[static_cast<size_t>(*rank)];
    return Status::OK();
  }
  for (const auto& [index, host] : o.step_nodes) {
    if (host != v) continue;
    o.node_index = index;
    o.host = host;
    return Status::OK();
  }
  return Status::InvalidArgument(fmt::format("--step-identity {}='{}': not one of this step's nodes ({} listed)", var,
                                             v, o.step_nodes.size()));
}

bool IsStepTaskVariable(const std::string& name) {
  static const char* const kPrefixes[] = {"SLURM_STEP_", "SLURM_CPU_BIND", "OMPI_", "PMIX_", "PMI_", "HYDI_", "MPI_LOCAL"};
  static const char* const kNames[] = {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GTIDS",
                                       "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEPID", "SLURM_TASK_PID",
                                       "SLURM_TASKS_PER_NODE", "SLURM_DISTRIBUTION", "SLURM_LAUNCH_NODE_IPADDR",
                                       "SLURM_SRUN_COMM_HOST", "SLURM_SRUN_COMM_PORT", "SLURM_PRIO_PROCESS"};
  for (const char* p : kPrefixes)
    if (StartsWith(name, p)) return true;
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

}  // namespace ds
