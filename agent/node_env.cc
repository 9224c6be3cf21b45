#include "agent/node_env.h"

#include <algorithm>
#include <map>

#include "agent/agent_args.h"
#include "agent/python_path.h"

namespace ds {

KeyValues NodeWorkerEnv(const NodeEnvInputs& in) {
  KeyValues env;
  std::map<std::string, size_t> index;
  auto set = [&](const std::string& k, const std::string& v) {
    auto it = index.find(k);
    if (it != index.end()) env[it->second].second = v;
    else { index[k] = env.size(); env.emplace_back(k, v); }
  };
  for (const auto& [k, v] : in.inherited)
    if (k != "DSLAUNCH_SECRET_FD" && !(in.drop_step_variables && IsStepTaskVariable(k))) set(k, v);
  for (const auto& [k, v] : in.assigned) set(k, v);
  set("DSLAUNCH_HEARTBEAT_TOKEN", in.heartbeat_token);  // the agent's own, never the coordinator's or ours
  if (!in.snapshot_dir.empty()) set("DSLAUNCH_SNAPSHOT_DIR", in.snapshot_dir);
  if (!in.error_file.empty()) set("TORCHELASTIC_ERROR_FILE", in.error_file);
  if (in.omp_threads > 0) set("OMP_NUM_THREADS", std::to_string(in.omp_threads));
  // Behind the relay, rank 0's store listens on a port of its own.
  if (in.rank0_store_port > 0) set("MASTER_PORT", std::to_string(in.rank0_store_port));
  // The dslaunch Python package (python_path.h), after the user's entries.
  if (!in.python_dir.empty()) {
    auto it = index.find("PYTHONPATH");
    set("PYTHONPATH", AppendPythonPath(it == index.end() ? "" : env[it->second].second, in.python_dir));
  }
  // Nobody chose the interfaces: the one that routes to MASTER_ADDR here.
  for (const char* k : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"})
    if (!in.ifname.empty() && !index.count(k)) set(k, in.ifname);
  // Ours or none: a path inherited from elsewhere is never the one we read.
  if (in.error_file.empty())
    std::erase_if(env, [](const auto& kv) { return kv.first == "TORCHELASTIC_ERROR_FILE"; });
  return env;
}

}  // namespace ds
