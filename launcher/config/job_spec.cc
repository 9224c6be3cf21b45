#include "launcher/config/job_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "common/duration.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/strings.h"
#include "launcher/config/env_limits.h"
#include "runtime/config/trainer_config.h"
#include "runtime/config/yaml_keys.h"

namespace ds {
namespace {

const std::vector<std::string> kTopKeys = {"command", "trainer", "procs_per_node", "env",
                                           "working_dir", "log_dir", "checkpoint_dir", "checkpoint",
                                           "elastic", "network", "ssh", "local_rank_arg",
                                           "bind_cores_to_rank", "bind_core_list", "forward_env", "pty",
                                           "metrics_port", "metrics_addr", "progress_interval", "python",
                                           "coordinator"};
const std::vector<std::string> kElasticKeys = {"min_nodes", "max_nodes", "max_restarts",
                                               "heartbeat_interval", "heartbeat_timeout",
                                               "hang_timeout", "rejoin", "max_host_failures",
                                               "host_cooldown", "slow_factor", "slow_window",
                                               "slow_link_factor", "slow_link_floor",
                                               "in_place", "in_place_deadline",
                                               "hang_factor", "hang_floor", "evict_slow", "evict_cooldown"};
// elastic.in_place_deadline: Reshape carries it in milliseconds (u32).
constexpr DurationRange kInPlaceDeadlineRange{0.01, 3600};  // 10ms .. 1h
// Ranges of the coordinator-only durations (docs/usage.md's table).
constexpr DurationRange kHangFloorRange{0.5, 86400};     // 500ms .. 24h
constexpr DurationRange kEvictCooldownRange{0, 604800};  // 0 .. 168h
constexpr DurationRange kSlowLinkFloorRange{0.001, 60};   // 1ms .. 1m
const std::vector<std::string> kNetworkKeys = {"interface", "master_addr", "master_port"};
const std::vector<std::string> kCheckpointKeys = {"dir", "shared", "replicas", "keep"};
const std::vector<std::string> kPythonKeys = {"preload"};
const std::vector<std::string> kSshKeys = {"strict_host_key_checking", "connect_timeout", "port"};
const std::vector<std::string> kHostKeyPolicies = {"yes", "accept-new", "no"};

// Worker-contract variables a user may still set in env: (their value wins).
const std::set<std::string> kUserSettable = {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
                                             "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
                                             "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"};

// Reads one job file. Every error goes through At(), which prefixes
// "path:line:col: " from the node's position.
class JobFileReader {
 public:
  explicit JobFileReader(std::string path) : path_(std::move(path)) {}

  Status At(const YAML::Node& n, const std::string& msg) const {
    return Status::InvalidArgument(Where(n) + ": " + msg);
  }

  // "path:line:col" of `n`; "path" when yaml-cpp has no position for it.
  std::string Where(const YAML::Node& n) const {
    YAML::Mark m = n.Mark();
    if (m.is_null()) return path_;
    return path_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  // Checks that `map` is a mapping whose keys are unique strings from
  // `allowed` (the one unknown-key check, runtime/config/yaml_keys.h).
  Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& allowed,
                   const std::string& section) const {
    if (!map.IsMap()) return At(map, "expected a mapping for '" + section + "'");
    return rt::cfg::CheckKeys(map, path_, section == "job file" ? "" : section, allowed);
  }

  // The trainer: section, checked by dstrain's own parser. Not yet known:
  // the world size (CheckTrainerForWorld does the batch sizes with the
  // plan's) and a ds_config.json named by path (it is read where the
  // workers run).
  Status Trainer(const YAML::Node& n) const {
    if (!n.IsMap()) return At(n, "expected a mapping for 'trainer'");
    rt::TrainerConfigOptions o;
    o.world_size = 0;
    o.origin = path_;
    o.read_config_file = false;
    return rt::ParseTrainerSection(n, o).status();
  }

  Result<std::string> Str(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return At(n, "'" + key + "': expected a string");
    return n.Scalar();
  }

  Result<int> Int(const YAML::Node& n, const std::string& key, int lo, int hi) const {
    auto v = n.IsScalar() ? ParseInt(n.Scalar()) : std::nullopt;
    if (!v || *v < lo || *v > hi)
      return At(n, "'" + key + "': expected an integer between " + std::to_string(lo) + " and " +
                       std::to_string(hi) + (n.IsScalar() ? ", got '" + n.Scalar() + "'" : ""));
    return static_cast<int>(*v);
  }

  // elastic.slow_factor, slow_link_factor, hang_factor: 0 (off) or a number from 1.1 to 100.
  Result<double> Factor(const YAML::Node& n, const std::string& key) const {
    double v = -1;
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      char* end = nullptr;
      v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) v = -1;
    }
    if (v != 0 && !(v >= 1.1 && v <= 100))
      return At(n, "'" + key + "': expected 0 (off) or a number from 1.1 to 100" +
                       (n.IsScalar() ? ", got '" + n.Scalar() + "'" : std::string()));
    return v;
  }

  Result<double> Seconds(const YAML::Node& n, const std::string& key) const {
    auto v = n.IsScalar() ? ParseSeconds(n.Scalar()) : std::nullopt;
    if (!v)
      return At(n, "'" + key + "': expected a duration such as 500ms, 3s or 2m" +
                       (n.IsScalar() ? ", got '" + n.Scalar() + "'" : std::string()));
    return *v;
  }

  // A duration and its documented range (common/duration.h, docs/usage.md).
  Result<double> Seconds(const YAML::Node& n, const std::string& key, const DurationRange& r) const {
    DS_ASSIGN_OR_RETURN(double v, Seconds(n, key));
    if (!InRange(v, r)) return At(n, "'" + key + "': expected " + RangeText(r) + ", got '" + n.Scalar() + "'");
    return v;
  }

  Result<bool> Bool(const YAML::Node& n, const std::string& key) const {
    if (n.IsScalar()) {
      std::string s = n.Scalar();
      std::transform(s.begin(), s.end(), s.begin(), ::tolower);  // YAML 1.1: true, True, TRUE
      if (s == "true" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "no" || s == "off") return false;
    }
    return At(n, "'" + key + "': expected true or false");
  }

  // One argv string as exec takes it: no NUL byte (it would end the string
  // there), no longer than MAX_ARG_STRLEN.
  Status CheckArgument(const YAML::Node& a) const {
    const std::string& s = a.Scalar();
    if (size_t nul = s.find('\0'); nul != std::string::npos)
      return At(a, "'command': the argument contains a NUL byte at offset " + std::to_string(nul));
    if (s.size() + 1 > kMaxExecStringBytes)
      return At(a, "'command': the argument is " + std::to_string(s.size() + 1) + " bytes, over the kernel's limit of " +
                       std::to_string(kMaxExecStringBytes) + " for one argument (MAX_ARG_STRLEN)");
    return Status::OK();
  }

  // forward_env: a list of variable-name prefixes ([] forwards nothing).
  Status ForwardEnv(const YAML::Node& n, JobSpec& job) const {
    if (!n.IsSequence())
      return At(n, "'forward_env': expected a list of variable-name prefixes such as [NCCL_, PYTHON]");
    job.forward_env.clear();
    for (const auto& p : n) {
      if (!p.IsScalar() || p.Scalar().empty() || !IsEnvVarName(p.Scalar()))
        return At(p, "'forward_env': expected a variable-name prefix ([A-Za-z_][A-Za-z0-9_]*)" +
                         (p.IsScalar() ? ", got '" + p.Scalar() + "'" : std::string()));
      job.forward_env.push_back(p.Scalar());
    }
    return Status::OK();
  }

  // python: {preload: [torch, numpy]}: dotted module names.
  Status Python(const YAML::Node& n, PythonOptions& py) const {
    DS_RETURN_IF_ERROR(CheckKeys(n, kPythonKeys, "python"));
    const YAML::Node& list = n["preload"];
    if (!list) return Status::OK();
    if (!list.IsSequence()) return At(list, "'preload': expected a list of modules such as [torch, numpy]");
    for (const auto& m : list) {
      bool ok = m.IsScalar() && !m.Scalar().empty();
      for (const std::string& part : ok ? Split(m.Scalar(), '.') : std::vector<std::string>{})
        ok = ok && IsEnvVarName(part);  // the same grammar as a Python identifier's ASCII form
      if (!ok)
        return At(m, "'preload': expected a module name such as torch or torch.distributed" +
                         (m.IsScalar() ? ", got '" + m.Scalar() + "'" : std::string()));
      py.preload.push_back(m.Scalar());
    }
    return Status::OK();
  }

  Status Command(const YAML::Node& n, JobSpec& job) const {
    if (n.IsScalar()) {  // a string runs through the shell
      if (Trim(n.Scalar()).empty()) return At(n, "'command': expected a non-empty command");
      DS_RETURN_IF_ERROR(CheckArgument(n));
      job.command = {"/bin/sh", "-c", n.Scalar()};
      return Status::OK();
    }
    if (!n.IsSequence() || n.size() == 0)
      return At(n, "'command': expected a list of arguments such as [python3, train.py] or a shell string");
    for (const auto& a : n) {
      if (!a.IsScalar()) return At(a, "'command': expected each argument to be a string");
      DS_RETURN_IF_ERROR(CheckArgument(a));
      job.command.push_back(a.Scalar());
    }
    return Status::OK();
  }

  Status Env(const YAML::Node& n, JobSpec& job) const {
    if (!n.IsMap()) return At(n, "'env': expected a mapping of NAME: value");
    std::set<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) return At(kv.first, "'env': expected a variable name");
      const std::string& name = kv.first.Scalar();
      if (!IsEnvVarName(name)) return At(kv.first, "'env': '" + name + "' is not a valid environment variable name");
      if (!seen.insert(name).second) return At(kv.first, "duplicate key '" + name + "'");
      if (!IsUserSettableEnv(name))
        return At(kv.first, "'env': " + name + " is set by dslaunch for every worker and cannot be "
                            "overridden (use network: or checkpoint_dir: where they apply)");
      if (!kv.second.IsScalar())
        return At(kv.second, "'env': expected a string value for " + name);
      if (std::string problem = EnvEntryProblem(name, kv.second.Scalar()); !problem.empty())
        return At(kv.second, "'env': " + problem);
      job.env.emplace_back(name, kv.second.Scalar());
    }
    return Status::OK();
  }

  Status Elastic(const YAML::Node& n, ElasticOptions& e) const {
    DS_RETURN_IF_ERROR(CheckKeys(n, kElasticKeys, "elastic"));
    YAML::Node min_n, interval_n;
    for (const auto& kv : n) {
      const std::string& k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "min_nodes") { DS_ASSIGN_OR_RETURN(e.min_nodes, Int(v, k, 1, 1 << 20)); min_n = kv.first; e.min_nodes_set = true; }
      else if (k == "max_nodes") { DS_ASSIGN_OR_RETURN(e.max_nodes, Int(v, k, 0, 1 << 20)); }
      else if (k == "max_restarts") { DS_ASSIGN_OR_RETURN(e.max_restarts, Int(v, k, 0, 1 << 20)); }
      else if (k == "heartbeat_interval") {
        DS_ASSIGN_OR_RETURN(e.heartbeat_interval, Seconds(v, k));
        interval_n = kv.first;
        if (e.heartbeat_interval > 0) {  // 0 has its own message below
          DS_ASSIGN_OR_RETURN(e.heartbeat_interval, Seconds(v, k, kHeartbeatIntervalRange));
        }
      }
      else if (k == "heartbeat_timeout") { DS_ASSIGN_OR_RETURN(e.heartbeat_timeout, Seconds(v, k, kHeartbeatTimeoutRange)); }
      else if (k == "hang_timeout") { DS_ASSIGN_OR_RETURN(e.hang_timeout, Seconds(v, k, kHangTimeoutRange)); }
      else if (k == "rejoin") { DS_ASSIGN_OR_RETURN(e.rejoin, Bool(v, k)); }
      else if (k == "max_host_failures") { DS_ASSIGN_OR_RETURN(e.max_host_failures, Int(v, k, 0, 1 << 20)); }
      else if (k == "host_cooldown") { DS_ASSIGN_OR_RETURN(e.host_cooldown, Seconds(v, k, kHostCooldownRange)); }
      else if (k == "slow_factor") { DS_ASSIGN_OR_RETURN(e.slow_factor, Factor(v, k)); }
      else if (k == "slow_window") { DS_ASSIGN_OR_RETURN(e.slow_window, Seconds(v, k, kSlowWindowRange)); }
      else if (k == "slow_link_factor") { DS_ASSIGN_OR_RETURN(e.slow_link_factor, Factor(v, k)); }
      else if (k == "slow_link_floor") { DS_ASSIGN_OR_RETURN(e.slow_link_floor, Seconds(v, k, kSlowLinkFloorRange)); }
      else if (k == "in_place") { DS_ASSIGN_OR_RETURN(e.in_place, Bool(v, k)); }
      else if (k == "in_place_deadline") { DS_ASSIGN_OR_RETURN(e.in_place_deadline, Seconds(v, k, kInPlaceDeadlineRange)); }
      else if (k == "hang_factor") { DS_ASSIGN_OR_RETURN(e.hang_factor, Factor(v, k)); }
      else if (k == "hang_floor") { DS_ASSIGN_OR_RETURN(e.hang_floor, Seconds(v, k, kHangFloorRange)); }
      else if (k == "evict_slow") { DS_ASSIGN_OR_RETURN(e.evict_slow, Bool(v, k)); }
      else if (k == "evict_cooldown") { DS_ASSIGN_OR_RETURN(e.evict_cooldown, Seconds(v, k, kEvictCooldownRange)); }
    }
    if (e.max_nodes > 0 && e.min_nodes > e.max_nodes)
      return At(min_n.IsDefined() ? min_n : n, "'elastic': min_nodes (" + std::to_string(e.min_nodes) +
                                                   ") is greater than max_nodes (" + std::to_string(e.max_nodes) + ")");
    if (e.heartbeat_interval <= 0)
      return At(interval_n.IsDefined() ? interval_n : n, "'elastic': heartbeat_interval must be greater than 0");
    if (e.heartbeat_timeout <= e.heartbeat_interval)
      return At(n, "'elastic': heartbeat_timeout (" + fmt(e.heartbeat_timeout) +
                       ") must be greater than heartbeat_interval (" + fmt(e.heartbeat_interval) + ")");
    return Status::OK();
  }

  Status Network(const YAML::Node& n, NetworkOptions& net) const {
    DS_RETURN_IF_ERROR(CheckKeys(n, kNetworkKeys, "network"));
    for (const auto& kv : n) {
      const std::string& k = kv.first.Scalar();
      if (k == "interface") { DS_ASSIGN_OR_RETURN(net.interface, Str(kv.second, k)); }
      else if (k == "master_addr") { DS_ASSIGN_OR_RETURN(net.master_addr, Str(kv.second, k)); }
      else if (k == "master_port") { DS_ASSIGN_OR_RETURN(net.master_port, Int(kv.second, k, 0, 65535)); }
    }
    return Status::OK();
  }

  // checkpoint: {dir, shared, replicas, keep} (checkpoint_options.h); `dir`
  // may come from the checkpoint_dir: shorthand instead, not from both.
  Status Checkpoint(const YAML::Node& n, CheckpointOptions& ck) const {
    DS_RETURN_IF_ERROR(CheckKeys(n, kCheckpointKeys, "checkpoint"));
    YAML::Node shared_n;
    for (const auto& kv : n) {
      const std::string& k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "dir") {
        if (!ck.dir.empty()) return At(kv.first, "'checkpoint': dir and checkpoint_dir: are both set; use one of them");
        DS_ASSIGN_OR_RETURN(ck.dir, Str(v, k));
      } else if (k == "shared") { DS_ASSIGN_OR_RETURN(ck.shared, Bool(v, k)); shared_n = kv.first; }
      else if (k == "replicas") { DS_ASSIGN_OR_RETURN(ck.replicas, Int(v, k, 0, kMaxCheckpointReplicas)); }
      else if (k == "keep") { DS_ASSIGN_OR_RETURN(ck.keep, Int(v, k, 1, 1000)); }
    }
    if (ck.shared.value_or(false) && HasNodePlaceholder(ck.dir))
      return At(shared_n, "'checkpoint': dir " + ck.dir + " holds {host} or {node}, so the nodes do not share it; "
                          "remove shared: true");
    return Status::OK();
  }

  Status Ssh(const YAML::Node& n, SshJobOptions& ssh) const {
    DS_RETURN_IF_ERROR(CheckKeys(n, kSshKeys, "ssh"));
    for (const auto& kv : n) {
      const std::string& k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "strict_host_key_checking") {
        // YAML 1.1 reads a bare yes/no as a boolean; the scalar text is what was written.
        DS_ASSIGN_OR_RETURN(std::string policy, Str(v, k));
        std::string lower = policy;
        std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
        if (std::find(kHostKeyPolicies.begin(), kHostKeyPolicies.end(), lower) == kHostKeyPolicies.end()) {
          std::string msg = "'strict_host_key_checking': expected yes, accept-new or no, got '" + policy + "'";
          msg += DidYouMeanHint(lower, kHostKeyPolicies);
          return At(v, msg);
        }
        ssh.strict_host_key_checking = lower;
      } else if (k == "connect_timeout") {
        DS_ASSIGN_OR_RETURN(ssh.connect_timeout, Seconds(v, k));
        if (ssh.connect_timeout <= 0) return At(v, "'connect_timeout': must be greater than 0");
        DS_ASSIGN_OR_RETURN(ssh.connect_timeout, Seconds(v, k, kConnectTimeoutRange));
      } else if (k == "port") {
        DS_ASSIGN_OR_RETURN(int port, Int(v, k, 1, 65535));
        ssh.port = port;
      }
    }
    return Status::OK();
  }

  // Reads the file; every top-level key is checked on its own, so one run
  // names every bad key (at most kMaxJobFileErrors, into `errors`, which
  // the caller reports) instead of the first. A file that is not YAML, or
  // not a mapping, is one error, returned.
  Result<JobSpec> Read(const std::string& text, std::vector<Status>& errors) const {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::DeepRecursion& e) {  // yaml-cpp says only "bad file"
      return Status::InvalidArgument(path_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                                     std::to_string(e.mark.column + 1) + ": YAML nested too deeply");
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(path_ + ":" + std::to_string(e.mark.line + 1) + ":" +
                                     std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
    }
    if (!root.IsDefined() || root.IsNull())
      return Status::InvalidArgument(path_ + ": empty job file; expected 'command:' or 'trainer:'");
    if (!root.IsMap())
      return At(root, "expected a mapping of job keys (command, trainer, procs_per_node, env, ...)");
    errors = rt::cfg::KeyProblems(root, path_, "", kTopKeys, kMaxJobFileErrors + 1);
    auto note = [&errors](Status st) {
      if (!st.ok() && errors.size() <= kMaxJobFileErrors) errors.push_back(std::move(st));
    };
    JobSpec job;
    job.path = path_;
    TopState top;
    for (const auto& kv : root) {
      if (errors.size() > kMaxJobFileErrors) break;
      if (!kv.first.IsScalar()) continue;
      if (kv.first.Scalar() == "coordinator") {  // every problem of the section, not its first
        for (Status& st : ParseCoordinatorSection(kv.first, kv.second, path_, job.coordinator)) note(std::move(st));
      } else {
        note(TopKey(kv.first, kv.second, job, top));
      }
    }
    if (!top.has_command && !top.has_trainer)
      note(At(root, "expected 'command:' (what each worker runs) or 'trainer:' (the built-in trainer)"));
    if (top.trainer && !top.has_command) note(Trainer(*top.trainer));  // with both, that is the error
    if (top.has_trainer && !job.python.preload.empty())
      note(At(root["python"], "'python': preload applies to a Python command; this job runs the built-in trainer"));
    if (!errors.empty()) return errors.front();
    return job;
  }

 private:
  // What the top-level keys tell one another.
  struct TopState {
    bool has_command = false, has_trainer = false;
    std::optional<YAML::Node> trainer;  // set when the section is there to check
  };

  // One top-level key `key: v` into `job`.
  Status TopKey(const YAML::Node& key, const YAML::Node& v, JobSpec& job, TopState& top) const {
    const std::string& k = key.Scalar();
    if (k == "command") {
      top.has_command = true;  // also when it is wrong: no "expected 'command:'" on top of its error
      if (top.has_trainer) return At(key, "'command' and 'trainer' are both set; use one of them");
      return Command(v, job);
    }
    if (k == "trainer") {
      top.has_trainer = true;
      if (v.IsNull()) return At(key, "'trainer': expected the trainer's settings");
      YAML::Emitter out;
      out << v;
      job.trainer_yaml = out.c_str();
      if (std::string problem = EnvEntryProblem("DSLAUNCH_TRAINER_CONFIG", job.trainer_yaml); !problem.empty())
        return At(key, "'trainer': the section travels to the workers as " + problem);
      if (top.has_command) return At(key, "'command' and 'trainer' are both set; use one of them");
      top.trainer = v;
      return Status::OK();
    }
    if (k == "procs_per_node") {
      DS_ASSIGN_OR_RETURN(job.procs_per_node, Int(v, k, 1, 1 << 20));
      job.procs_per_node_at = Where(v);
      return Status::OK();
    }
    if (k == "checkpoint_dir") {
      if (!job.checkpoint.dir.empty())
        return At(key, "'checkpoint_dir' and checkpoint: dir are both set; use one of them");
      DS_ASSIGN_OR_RETURN(job.checkpoint.dir, Str(v, k));
      return Status::OK();
    }
    if (k == "env") return Env(v, job);
    if (k == "checkpoint") return Checkpoint(v, job.checkpoint);
    if (k == "elastic") return Elastic(v, job.elastic);
    if (k == "network") return Network(v, job.network);
    if (k == "ssh") return Ssh(v, job.ssh);
    if (k == "forward_env") return ForwardEnv(v, job);
    if (k == "python") return Python(v, job.python);
    return PlainKey(k, v, job);
  }

  // The top-level keys that are one value each.
  Status PlainKey(const std::string& k, const YAML::Node& v, JobSpec& job) const {
    if (k == "working_dir") { DS_ASSIGN_OR_RETURN(job.working_dir, Str(v, k)); }
    else if (k == "log_dir") { DS_ASSIGN_OR_RETURN(job.log_dir, Str(v, k)); }
    else if (k == "pty") { DS_ASSIGN_OR_RETURN(job.pty, Bool(v, k)); }
    else if (k == "metrics_port") { DS_ASSIGN_OR_RETURN(job.metrics_port, Int(v, k, 0, 65535)); }
    else if (k == "metrics_addr") { DS_ASSIGN_OR_RETURN(job.metrics_addr, Str(v, k)); }
    else if (k == "progress_interval") { DS_ASSIGN_OR_RETURN(job.progress_interval, Seconds(v, k)); }
    else if (k == "local_rank_arg") { DS_ASSIGN_OR_RETURN(job.local_rank_arg, Bool(v, k)); }
    else if (k == "bind_cores_to_rank") { DS_ASSIGN_OR_RETURN(job.bind_cores, Bool(v, k)); }
    else if (k == "bind_core_list") { DS_ASSIGN_OR_RETURN(job.core_list, Str(v, k)); }
    return Status::OK();  // an unknown key: KeyProblems named it
  }

  static std::string fmt(double seconds) {
    std::ostringstream o;
    o << seconds << "s";
    return o.str();
  }

  std::string path_;
};

// The line `lineno` (1-based) of `text` without its line end; nullopt past the end.
std::optional<std::string> LineOf(const std::string& text, int64_t lineno) {
  size_t start = 0;
  for (int64_t i = 1; i < lineno; ++i) {
    start = text.find('\n', start);
    if (start == std::string::npos) return std::nullopt;
    ++start;
  }
  if (start >= text.size()) return std::nullopt;
  std::string line = text.substr(start, text.find('\n', start) - start);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// The line an error "path:line:col: ..." points at; 0 when it names none
// (those sort first: they are about the whole file).
int64_t ErrorLine(const Status& st, const std::string& path) {
  const std::string& m = st.message();
  if (!StartsWith(m, path + ":")) return 0;
  const size_t l0 = path.size() + 1, l1 = m.find(':', l0);
  if (l1 == std::string::npos) return 0;
  return ParseInt(std::string_view(m).substr(l0, l1 - l0)).value_or(0);
}

// An error "path:line:col: message" gets that line of `text` and a caret
// under the column (the hostfile's LineError form; tabs copied so the caret
// lines up). Anything else is returned as it is.
Status WithSourceLine(Status st, const std::string& text, const std::string& path) {
  constexpr size_t kMaxEcho = 200;
  const std::string& m = st.message();
  if (st.code() != Status::Code::kInvalidArgument || !StartsWith(m, path + ":") ||
      m.find('\n') != std::string::npos)
    return st;
  const size_t l0 = path.size() + 1, l1 = m.find(':', l0);
  const size_t c1 = l1 == std::string::npos ? l1 : m.find(':', l1 + 1);
  if (c1 == std::string::npos) return st;
  const std::optional<int64_t> lineno = ParseInt(std::string_view(m).substr(l0, l1 - l0));
  const std::optional<int64_t> col = ParseInt(std::string_view(m).substr(l1 + 1, c1 - l1 - 1));
  if (!lineno || !col || *lineno < 1 || *col < 1) return st;
  const std::optional<std::string> line = LineOf(text, *lineno);
  if (!line || line->empty() || line->size() > kMaxEcho) return st;
  if (std::any_of(line->begin(), line->end(), [](char c) { return c != '\t' && (c < 0x20 || c > 0x7e); })) return st;
  std::string caret;
  for (size_t i = 0; i + 1 < static_cast<size_t>(*col) && i < line->size(); ++i) caret += (*line)[i] == '\t' ? '\t' : ' ';
  return Status::InvalidArgument(m + "\n" + *line + "\n" + caret + "^");
}

}  // namespace

Result<JobSpec> ParseJobFile(const std::string& text, const std::string& path) {
  std::vector<Status> errors;
  Result<JobSpec> job = [&]() -> Result<JobSpec> {
    try {
      return JobFileReader(path).Read(text, errors);
    } catch (const YAML::Exception& e) {  // defensive: yaml-cpp throws from accessors too
      errors.clear();
      return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                     std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
  }();
  if (job.ok()) return job;
  if (errors.empty()) errors.push_back(job.status());
  // Each error with its line and caret, in the file's order; what the file
  // said reaches the terminal escaped.
  std::stable_sort(errors.begin(), errors.end(), [&](const Status& a, const Status& b) {
    return ErrorLine(a, path) < ErrorLine(b, path);
  });
  std::string out;
  for (size_t i = 0; i < errors.size() && i < kMaxJobFileErrors; ++i) {
    Status st = WithSourceLine(errors[i], text, path);
    if (st.code() != Status::Code::kInvalidArgument) return st;
    out += (out.empty() ? "" : "\n") + PrintableText(st.message());
  }
  if (errors.size() > kMaxJobFileErrors)
    out += fmt::format("\n{}: more errors after these {}; fix them and run again", PrintableText(path), kMaxJobFileErrors);
  else if (errors.size() > 1)
    out += fmt::format("\n{}: {} errors", PrintableText(path), errors.size());
  return Status::InvalidArgument(out);
}

Result<JobSpec> LoadJobFile(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, "job file"));
  return ParseJobFile(text, path);
}

Status CheckTrainerForWorld(const JobSpec& job, int world_size) {
  if (job.trainer_yaml.empty()) return Status::OK();
  rt::TrainerConfigOptions o;
  o.world_size = world_size;
  o.origin = job.path;
  o.read_config_file = false;
  return rt::ParseTrainerConfig(job.trainer_yaml, o).status();
}

bool IsUserSettableEnv(const std::string& name) {
  const EnvParam* p = FindEnvParam(name);
  return p == nullptr || p->scope != EnvScope::kWorkerContract || kUserSettable.count(name) > 0;
}

JobSpec JobSpecFromCommand(const std::vector<std::string>& argv, const ScriptLaunch& how) {
  JobSpec job;
  if (how.no_python || argv.empty()) {
    // as is
  } else if (how.module) {
    job.command = {how.python, "-u", "-m"};
  } else if (argv[0].size() > 3 && argv[0].ends_with(".py")) {
    job.command = {how.python, "-u"};
  }
  if (!argv.empty()) job.local_rank_at = static_cast<int>(job.command.size()) + 1;  // after the script or module
  job.command.insert(job.command.end(), argv.begin(), argv.end());
  return job;
}

}  // namespace ds
