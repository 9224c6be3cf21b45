// JobSpec: what to run, read from a job file (train.yaml) or built from the
// command line (`train.py --deepspeed ds.json`, `-- any command`). Pure data
// plus the parser; validation errors name file:line:col and the key, with a
// "did you mean" for near misses. The trainer: section is checked by
// dstrain's own parser (runtime/config/trainer_config.h) at load, except
// what needs the world size (CheckTrainerForWorld, once there is a plan).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/defaults.h"
#include "common/status.h"
#include "launcher/config/checkpoint_options.h"
#include "launcher/config/coordinator_spec.h"

namespace ds {

// Hangs (launcher/coordinator/hang_detector.h): no rank advanced for
// max(hang_factor x the median step time, hang_floor) seconds; factor 0 = off.
// Eviction of a slow node (launcher/coordinator/evict.h): out evict_cooldown s.
// Only the coordinator reads them (common/defaults.h holds the defaults the
// agent and the env registry share too).
inline constexpr double kDefaultHangFactor = 0.0;
inline constexpr double kDefaultHangFloor = 30.0;
inline constexpr double kDefaultEvictCooldown = 600.0;

struct ElasticOptions {
  int min_nodes = 1;                // below this the job fails
  int max_nodes = 0;                // 0 = every selected host; extra hosts wait as standbys
  int max_restarts = 0;             // job-wide restart budget
  double heartbeat_interval = kDefaultHeartbeatInterval;  // seconds between agent heartbeats
  double heartbeat_timeout = kDefaultHeartbeatTimeout;    // an agent silent this long is lost
  double hang_timeout = kDefaultHangTimeout;  // a worker whose step heartbeat stalls this long is hung; 0 = off
  bool rejoin = true;               // a lost node that comes back joins at the next generation
  int max_host_failures = 0;        // a host whose workers failed this often sits out restarts
                                    // for host_cooldown (while min_nodes allows); 0 = never
  double host_cooldown = 300.0;     // seconds
  double slow_factor = kDefaultSlowFactor;  // a node above this x its peers' median compute (or step)
                                            // time for slow_window is reported slow; 0 = off
  double slow_window = kDefaultSlowWindow;  // seconds
  double slow_link_factor = kDefaultSlowLinkFactor;  // a node whose heartbeat round trip stays above this x
  double slow_link_floor = kDefaultSlowLinkFloor;    //   the other nodes' median, and this many seconds
                                                     //   above it, is reported (its link is slow); 0 = off
  // In-place recovery (dstrain with snapshots only, else ignored with a
  // notice): survivors keep their processes; anything not confirmed within
  // in_place_deadline falls back to the full restart.
  bool in_place = false;
  double in_place_deadline = 5.0;   // seconds
  double hang_factor = kDefaultHangFactor;  // hung: no rank advanced for max(hang_factor x the median step
  double hang_floor = kDefaultHangFloor;    //   time, hang_floor s); stacks taken, then a failure; 0 = off
  bool evict_slow = false;                  // a node reported slow is stopped out at the next snapshot
                                            //   (a restart within max_restarts) ...
  double evict_cooldown = kDefaultEvictCooldown;  // ... and not taken back for this many seconds
  bool min_nodes_set = false;       // min_nodes was written in the job file: start on the
                                    // reachable hosts when at least min_nodes of them are
};

struct NetworkOptions {
  std::string interface;    // forces NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME on every node; "" = detect
  std::string master_addr;  // "" = node rank 0's address that routes to the coordinator
  int master_port = 0;      // 0 = pick a free port per generation
};

// The job file's ssh: section. Unset fields fall back to the command line
// and the DSLAUNCH_SSH_* / DSLAUNCH_CONNECT_TIMEOUT settings
// (SshOptionsForJob in launcher/cmd/spawner_choice.h has the precedence).
struct SshJobOptions {
  std::string strict_host_key_checking;  // "yes" | "accept-new" | "no"; "" = not set
  double connect_timeout = 0.0;          // seconds per host; 0 = not set
  std::optional<int> port;               // hosts without ssh_port=, unless --ssh_port
};

// DeepSpeed's exported-prefix list: the launcher's variables starting with
// one of these reach every worker on every node.
inline std::vector<std::string> DefaultForwardEnv() { return {"NCCL", "PYTHON", "MV2", "UCX", "FI_", "MLFLOW"}; }

// What a worker's pseudo-terminals look like (--pty): the launcher's
// terminal less the widest "host:rank " prefix, and the launcher's TERM.
struct PtyWindow {
  int columns = 80;
  int rows = 24;
  std::string term = "xterm-256color";  // TERM for workers whose job and hosts did not set it
};

// The job file's python: section (warm spares: agent/warm/spares.h).
struct PythonOptions {
  std::vector<std::string> preload;  // modules each warm spare imports; empty = no warm spares
};

struct JobSpec {
  std::string path;                        // job file path, "" when built from the command line
  std::vector<std::string> command;        // argv of each worker; empty when `trainer` is set
  std::string trainer_yaml;                // the trainer: section (checked) as YAML text; "" when
                                           // `command` is set
  int procs_per_node = 0;                  // 0 = the host's slots
  std::string procs_per_node_at;           // "train.yaml:3:17": where procs_per_node was set, for the
                                           //   plan's errors; "" = not from a file
  std::vector<std::pair<std::string, std::string>> env;  // extra worker environment, in order
  std::string working_dir;                 // "" = the launcher's current directory (made absolute
                                           //   at plan time, so remote workers start there too)
  std::string log_dir;                     // per-rank log files; "" = none
  bool pty = false;                        // each worker's stdout and stderr are pseudo-terminals
  PtyWindow pty_window;                    //   of this size (set at launch from the launcher's terminal)
  int metrics_port = -1;                   // Prometheus /metrics port (0 = any free one); -1 = none
  std::string metrics_addr = "127.0.0.1";  // where /metrics listens (numeric)
  double progress_interval = 60;           // seconds between progress lines off a terminal; 0 = none
  CheckpointOptions checkpoint;            // checkpoint: / checkpoint_dir: (checkpoint_options.h)
  ElasticOptions elastic;
  NetworkOptions network;
  SshJobOptions ssh;
  PythonOptions python;
  CoordinatorSpec coordinator;             // coordinator: (coordinator_spec.h); a run leads the job in etcd

  // DeepSpeed / torchrun compatibility (docs/coming-from.md).
  bool local_rank_arg = false;             // add --local_rank=N to each worker's argv (DeepSpeed's
                                           //   script form; off for torchrun-style runs)
  int local_rank_at = -1;                  // where in `command` it goes: right after the script, as
                                           //   DeepSpeed puts it; -1 = at the end (a job file's command)
  bool bind_cores = false;                 // pin each local rank to its share of the cores
  std::string core_list;                   // the cores to share out, e.g. "0-3,8-11"; "" = every core
                                           //   the agent may run on
  std::vector<std::string> forward_env = DefaultForwardEnv();  // prefixes of the launcher's variables
                                           //   every worker gets (DeepSpeed's exported list)
};

// Parses a job file's YAML text. `path` is used in messages only. An error
// that points into the file ("train.yaml:3:17: ...") is followed by that line
// and a caret under the column, as the hostfile's errors are (lines over 200
// bytes, or with bytes other than printable ASCII and tabs, are not echoed).
// Every top-level key is checked, so one error names every bad key (each
// section stops at its first, but coordinator: names all of its), in the file's order, at most
// kMaxJobFileErrors, then "train.yaml: N errors" (or that more follow).
inline constexpr size_t kMaxJobFileErrors = 20;
Result<JobSpec> ParseJobFile(const std::string& text, const std::string& path);
Result<JobSpec> LoadJobFile(const std::string& path);

// The trainer: checks that need the world size (DeepSpeed's batch sizes must
// divide over `world_size` ranks), e.g. "train.yaml trainer.config:
// train_batch_size (10) is not divisible by world size (4)". OK for a job
// without trainer:.
Status CheckTrainerForWorld(const JobSpec& job, int world_size);

// How JobSpecFromCommand turns a script or module into a worker's argv. The
// caller decides (the launcher reads PYTHON_EXEC once, in its CliOptions).
struct ScriptLaunch {
  std::string python = "python3";  // interpreter for a .py script and for a module (PYTHON_EXEC)
  bool module = false;             // -m/--module: `python -u -m argv...` (torchrun's form)
  bool no_python = false;          // --no-python: argv as is, even a .py
};

// DeepSpeed's form: `train.py args... [--deepspeed ds_config.json]` runs as
// `<python> -u train.py args...`; with `how.module` argv[0] is a module run
// as `<python> -u -m argv...`; with `how.no_python`, or for anything but a
// .py, argv runs as is.
JobSpec JobSpecFromCommand(const std::vector<std::string>& argv, const ScriptLaunch& how = {});

// False for the variables dslaunch sets for every worker (RANK, MASTER_ADDR,
// DSLAUNCH_JOB_ID, ...), which job env: and hostfile keys cannot override;
// true for anything else, including NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME,
// CUDA_VISIBLE_DEVICES and OMP_NUM_THREADS.
bool IsUserSettableEnv(const std::string& name);

}  // namespace ds
