// The environment a job adds to every worker, gathered at plan time from
// where DeepSpeed and torchrun users keep it, lowest precedence first:
//   1. the launcher's own variables whose names start with one of the job's
//      forward_env prefixes (DeepSpeed's NCCL, PYTHON, MV2, UCX, FI_, MLFLOW),
//   2. PYTHONPATH = <working dir>[:<the launcher's PYTHONPATH>] (DeepSpeed
//      puts the directory it was started from first),
//   3. .deepspeed_env in $HOME, then in the working directory (or the file
//      DS_ENV_FILE names),
//   4. .dslaunch_env in $HOME, then in the working directory,
//   5. the job file's env:.
// The hostfile's per-host keys come after all of these (WorkerEnv). Values
// travel byte for byte; nothing is expanded. Pure apart from reading files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/config/job_spec.h"

namespace ds {

// The entries of `launcher_env` whose names start with one of `prefixes`
// (and that a worker may be given: never dslaunch's own variables), in
// their original order.
KeyValues ForwardedEnv(const KeyValues& launcher_env, const std::vector<std::string>& prefixes);

// Adds `more` to `into`: a name already there takes the new value in its
// old position, so every name appears once and later sources win.
void MergeEnv(KeyValues& into, const KeyValues& more);

// `job.working_dir` made absolute against `cwd` ("" = `cwd` itself).
std::string AbsoluteWorkingDir(const std::string& working_dir, const std::string& cwd);

// Replaces job.env with sources 1-5 above, one entry per name.
// `job.working_dir` must already be absolute; $HOME, PYTHONPATH and
// DS_ENV_FILE are read from `launcher_env`. Errors are the env files'
// (path:line), or DS_ENV_FILE naming a file that is not there.
Status ResolveJobEnv(JobSpec& job, const KeyValues& launcher_env);

}  // namespace ds
