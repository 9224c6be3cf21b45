#include "common/env_registry.h"

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "common/check.h"
#include "common/defaults.h"
#include "common/strings.h"

extern char** environ;

namespace ds {
namespace {

using T = EnvType;
constexpr EnvScope S = EnvScope::kSetting;
constexpr EnvScope W = EnvScope::kWorkerContract;

// The defaults.h constants as the table writes durations ("10s").
const std::string kConnectTimeoutText = fmt::format("{}s", kDefaultConnectTimeout);
const std::string kStopGraceText = fmt::format("{}s", kDefaultStopGrace);

// One line per variable. Keep sorted by subsystem, settings before contract.
const std::vector<EnvParam> kParams = {
    // Logging.
    {"DSLAUNCH_LOG", T::kString, "WARN", S, "diagnostic level: NONE, WARN, INFO or DEBUG"},
    {"DSLAUNCH_LOG_SUBSYS", T::kString, "ALL", S, "comma list of subsystems to log (INIT,SSH,AGENT,COORD,HB,STORE,PROTO,PROC,TRAIN,COMM,CKPT); ^X excludes"},
    {"DSLAUNCH_COLOR", T::kString, "auto", S, "color rank prefixes: auto (on a TTY), always, never"},
    // Launcher.
    {"DSLAUNCH_AGENT_PATH", T::kString, "", S, "path of dsagent on the nodes (default: next to dslaunch)"},
    {"DSLAUNCH_DSTRAIN_PATH", T::kString, "", S, "path of dstrain on the nodes (default: next to dslaunch)"},
    {"DSLAUNCH_CONNECT_TIMEOUT", T::kSeconds, kConnectTimeoutText.c_str(), S, "SSH connect timeout per host", kConnectTimeoutRange},
    {"DSLAUNCH_SSH_CONFIG", T::kString, "", S, "ssh config file read by the ssh spawner and check (default ~/.ssh/config)"},
    {"DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING", T::kString, "accept-new", S, "host key policy: yes, accept-new (add unknown hosts) or no (warns on every connection)"},
    {"DSLAUNCH_SECRET_FILE", T::kString, "", S, "the per-node form (--node_rank): a file (mode 0600, yours) whose first line is the job secret every node shares"},
    {"DSLAUNCH_DEFAULT_HOSTFILE", T::kString, "/job/hostfile", S, "hostfile used when --hostfile is not given and this file exists (DeepSpeed's default path)"},
    {"DSLAUNCH_STDIN_LIFELINE", T::kBool, "0", S, "stop the job when stdin closes, as Ctrl-C would (dslaunch cluster run sets it in the controller)"},
    {"DSLAUNCH_CLUSTER_DIR", T::kString, "", S, "dslaunch cluster: folder of the clusters' state, keys and compose files (default /var/lib/dslaunch/clusters as root)"},
    {"DSLAUNCH_DOCKER_DIR", T::kString, "", S, "dslaunch cluster: the docker/ folder with the Dockerfile (default: the source tree's)"},
    {"DSLAUNCH_STOP_GRACE", T::kSeconds, kStopGraceText.c_str(), S, "time between SIGTERM and SIGKILL when stopping workers", kStopGraceRange},
    // Agent.
    {"DSLAUNCH_SECRET_FD", T::kInt, "", S, "agent: fd to read the job secret from (default: stdin)"},
    // Worker contract: set by dslaunch for every worker.
    {"DSLAUNCH_JOB_ID", T::kString, "", W, "the job's id"},
    {"DSLAUNCH_RUN_ID", T::kString, "", W, "this dslaunch invocation's id, the same in all its generations: recorded with every checkpoint"},
    {"DSLAUNCH_GENERATION", T::kInt, "0", W, "generation number (increments on every restart)"},
    {"DSLAUNCH_RESTART_COUNT", T::kInt, "0", W, "restarts so far, job-wide"},
    {"DSLAUNCH_STORE_ADDR", T::kString, "", W, "host:port of the coordinator's key/value store"},
    {"DSLAUNCH_STORE_TOKEN", T::kString, "", W, "credential for the store, valid for this generation"},
    {"DSLAUNCH_STORE_PATH", T::kString, "", W, "directory of a file store (standalone runs without dslaunch)"},
    {"DSLAUNCH_HEARTBEAT_ADDR", T::kString, "", W, "host:port of the local agent's step heartbeat endpoint"},
    {"DSLAUNCH_HEARTBEAT_TOKEN", T::kString, "", W, "this worker's private credential, carried by each step heartbeat (set by the agent)"},
    {"DSLAUNCH_CHECKPOINT_DIR", T::kString, "", W, "checkpoint directory of the job (this node's, when checkpoint.dir holds {host} or {node})"},
    {"DSLAUNCH_SNAPSHOT_DIR", T::kString, "", W, "snapshots on: the node agent's memory directory; shards are handed over in its incoming/ (set by the agent)"},
    {"DSLAUNCH_RESUME_STEP", T::kInt, "-1", W, "snapshots on: the step to resume from, in DSLAUNCH_SNAPSHOT_DIR; -1 = start fresh"},
    {"DSLAUNCH_RESUME_SET", T::kString, "", W, "snapshots on: which save of DSLAUNCH_RESUME_STEP (its manifest's digest); the worker checks it"},
    {"DSLAUNCH_CONTROL_FD", T::kInt, "", W, "elastic.in_place: the agent's control channel (a SOCK_SEQPACKET socket) for in-place reshapes of dstrain and dslaunch.torch.elastic() (set by the agent)"},
    {"DSLAUNCH_TRAINER_CONFIG", T::kString, "", W, "the job file's trainer: section as YAML text (dstrain)"},
    {"DSLAUNCH_HOST", T::kString, "", W, "the node's host name as written in the hostfile"},
    {"DSLAUNCH_COLLECTIVE_TIMEOUT", T::kSeconds, "60s", S, "dstrain: a collective that takes longer fails", kCollectiveTimeoutRange},
    {"DSLAUNCH_STORE_RELAY", T::kBool, "1", S, "0: rank 0 listens on MASTER_PORT itself, not behind node rank 0's agent's relay (rank 0's MASTER_PORT then is everyone's)"},
    {"DSLAUNCH_PYTHON_PACKAGE", T::kBool, "1", S, "0: the agent leaves the workers' PYTHONPATH as it is, without the dslaunch Python package and its optimizer-step beats (agent/python_path.h)"},
    {"DSLAUNCH_BIND_CORES", T::kBool, "0", S, "dstrain: pin each local rank to its share of the allowed CPUs (DeepSpeed's --bind_cores_to_rank)"},
    {"RANK", T::kInt, "0", W, "global rank of this worker"},
    {"LOCAL_RANK", T::kInt, "0", W, "rank of this worker on its node"},
    {"WORLD_SIZE", T::kInt, "1", W, "number of workers in the job"},
    {"LOCAL_WORLD_SIZE", T::kInt, "1", W, "number of workers on this node"},
    {"GROUP_RANK", T::kInt, "0", W, "node rank"},
    {"GROUP_WORLD_SIZE", T::kInt, "1", W, "number of nodes"},
    {"ROLE_RANK", T::kInt, "0", W, "same as RANK (single role)"},
    {"ROLE_WORLD_SIZE", T::kInt, "1", W, "same as WORLD_SIZE (single role)"},
    {"ROLE_NAME", T::kString, "default", W, "torchrun: the worker role (one role: default)"},
    {"TORCHELASTIC_RUN_ID", T::kString, "", W, "torchrun: the job's id (same as DSLAUNCH_JOB_ID)"},
    {"TORCHELASTIC_RESTART_COUNT", T::kInt, "0", W, "torchrun: restarts so far, job-wide"},
    {"TORCHELASTIC_MAX_RESTARTS", T::kInt, "0", W, "torchrun: the job's restart budget (elastic.max_restarts)"},
    {"TORCHELASTIC_USE_AGENT_STORE", T::kString, "False", W, "torchrun: False, the store is not at MASTER_ADDR:MASTER_PORT"},
    {"TORCHELASTIC_ERROR_FILE", T::kString, "", W, "torchrun: where @record writes this worker's exception (set by the agent; read when it fails)"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", T::kString, "1", W, "torchrun's default (unless the user set it)"},
    {"NCCL_ASYNC_ERROR_HANDLING", T::kString, "1", W, "the same, by the name torch before 2.2 reads (unless the user set it)"},
    {"CROSS_RANK", T::kInt, "0", W, "DeepSpeed: node rank"},
    {"CROSS_SIZE", T::kInt, "1", W, "DeepSpeed: number of nodes"},
    {"LOCAL_SIZE", T::kInt, "1", W, "DeepSpeed: workers on this node"},
    {"MASTER_ADDR", T::kString, "127.0.0.1", W, "address of node rank 0 reachable from every node"},
    {"MASTER_PORT", T::kInt, "free", W, "a free port reserved on node rank 0 for each generation (network.master_port fixes it); rank 0's differs, see DSLAUNCH_STORE_RELAY"},
    {"NCCL_SOCKET_IFNAME", T::kString, "", W, "interface that routes to MASTER_ADDR (unless the user set it)"},
    {"GLOO_SOCKET_IFNAME", T::kString, "", W, "interface that routes to MASTER_ADDR (unless the user set it)"},
    {"CUDA_VISIBLE_DEVICES", T::kString, "", W, "GPUs assigned to this worker"},
    {"OMP_NUM_THREADS", T::kInt, "", W, "threads per worker (cores / local workers when unset)"},
};

const char* TypeName(EnvType t) {
  switch (t) {
    case T::kString: return "string";
    case T::kInt: return "int";
    case T::kBool: return "bool";
    case T::kSeconds: return "duration";
  }
  return "?";
}

const EnvParam& Lookup(const char* name) {
  const EnvParam* p = FindEnvParam(name);
  DS_CHECK_MSG(p != nullptr, name);
  return *p;
}

void WarnMalformed(const EnvParam& p, const std::string& value, const char* expected) {
  std::cerr << "dslaunch: warning: " << p.name << "='" << value << "': expected " << expected
            << ", using the default '" << p.default_value << "'\n";
}

}  // namespace

const std::vector<EnvParam>& EnvParams() { return kParams; }

const EnvParam* FindEnvParam(const std::string& name) {
  for (const auto& p : kParams)
    if (name == p.name) return &p;
  return nullptr;
}

std::optional<std::string> GetAnyEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> EnvRaw(const char* name) {
  Lookup(name);
  return GetAnyEnv(name);
}

std::string EnvString(const char* name) {
  const EnvParam& p = Lookup(name);
  auto v = GetAnyEnv(name);
  return v && !v->empty() ? *v : std::string(p.default_value);
}

int64_t EnvInt(const char* name) {
  const EnvParam& p = Lookup(name);
  auto v = GetAnyEnv(name);
  if (v && !v->empty()) {
    if (auto n = ParseInt(*v)) return *n;
    WarnMalformed(p, *v, "an integer");
  }
  return ParseInt(p.default_value).value_or(0);
}

bool EnvBool(const char* name) {
  const EnvParam& p = Lookup(name);
  auto v = GetAnyEnv(name);
  if (v && !v->empty()) {
    if (*v == "1" || *v == "true" || *v == "yes" || *v == "on") return true;
    if (*v == "0" || *v == "false" || *v == "no" || *v == "off") return false;
    WarnMalformed(p, *v, "1/0, true/false, yes/no or on/off");
  }
  return std::strcmp(p.default_value, "1") == 0 || std::strcmp(p.default_value, "true") == 0;
}

double EnvSeconds(const char* name) {
  const EnvParam& p = Lookup(name);
  auto v = GetAnyEnv(name);
  if (v && !v->empty()) {
    if (auto s = ParseSeconds(*v)) return *s;
    WarnMalformed(p, *v, "a duration such as 500ms, 3s or 2m");
  }
  return ParseSeconds(p.default_value).value_or(0);
}

Result<double> EnvDuration(const char* name) {
  const EnvParam& p = Lookup(name);
  DS_CHECK_MSG(p.type == EnvType::kSeconds, name);
  auto v = GetAnyEnv(name);
  if (!v || v->empty()) return ParseSeconds(p.default_value).value_or(0);
  auto s = ParseSeconds(*v);
  if (!s)
    return Status::InvalidArgument(fmt::format("{}='{}': expected a duration such as 500ms, 3s or 2m", name, *v));
  if (!InRange(*s, p.range))
    return Status::InvalidArgument(fmt::format("{}='{}': expected {}", name, *v, RangeText(p.range)));
  return *s;
}

KeyValues ProcessEnvironment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    out.emplace_back(std::string(*e, eq - *e), std::string(eq + 1));
  }
  return out;
}

std::string FormatEnvTable() {
  // Columns as wide as their widest cell, so every row lines up.
  auto current = [](const EnvParam& p) {
    auto cur = GetAnyEnv(p.name);
    std::string shown = cur ? *cur : "-";
    if (shown.size() > 14) shown = shown.substr(0, 11) + "...";
    if (std::strcmp(p.name, "DSLAUNCH_STORE_TOKEN") == 0 && cur) shown = "(hidden)";
    return shown;
  };
  auto def = [](const EnvParam& p) { return std::string(*p.default_value ? p.default_value : "-"); };
  size_t name_w = 4, type_w = 4, def_w = 7, cur_w = 7;
  for (const auto& p : kParams) {
    name_w = std::max(name_w, std::strlen(p.name));
    type_w = std::max(type_w, std::strlen(TypeName(p.type)));
    def_w = std::max(def_w, def(p).size());
    cur_w = std::max(cur_w, current(p).size());
  }
  auto row = [&](const std::string& n, const std::string& t, const std::string& d, const std::string& c,
                 const std::string& h) {
    return fmt::format("  {:<{}} {:<{}} {:<{}} {:<{}} {}\n", n, name_w, t, type_w, d, def_w, c, cur_w, h);
  };
  std::string out;
  for (EnvScope scope : {EnvScope::kSetting, EnvScope::kWorkerContract}) {
    out += scope == EnvScope::kSetting ? "Settings (read by dslaunch, dsagent, dstrain):\n"
                                       : "\nWorker contract (set by dslaunch for every worker):\n";
    out += row("NAME", "TYPE", "DEFAULT", "CURRENT", "HELP");
    for (const auto& p : kParams)
      if (p.scope == scope) out += row(p.name, TypeName(p.type), def(p), current(p), p.help);
  }
  return out;
}

}  // namespace ds
