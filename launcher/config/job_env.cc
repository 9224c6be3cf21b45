#include "launcher/config/job_env.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "launcher/config/env_files.h"
#include "launcher/config/env_limits.h"

namespace ds {
namespace {

const std::string* Find(const KeyValues& env, const std::string& name) {
  for (const auto& kv : env)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

std::string HomeOf(const KeyValues& launcher_env) {
  const std::string* home = Find(launcher_env, "HOME");
  return home == nullptr ? "" : *home;
}

}  // namespace

KeyValues ForwardedEnv(const KeyValues& launcher_env, const std::vector<std::string>& prefixes) {
  KeyValues out;
  for (const auto& [k, v] : launcher_env) {
    bool match = false;
    for (const auto& p : prefixes) match = match || StartsWith(k, p);
    if (match && IsUserSettableEnv(k)) out.emplace_back(k, v);
  }
  return out;
}

void MergeEnv(KeyValues& into, const KeyValues& more) {
  for (const auto& [k, v] : more) {
    bool found = false;
    for (auto& kv : into)
      if (kv.first == k) {
        kv.second = v;
        found = true;
        break;
      }
    if (!found) into.emplace_back(k, v);
  }
}

std::string AbsoluteWorkingDir(const std::string& working_dir, const std::string& cwd) {
  if (working_dir.empty() || working_dir == ".") return cwd;
  if (working_dir[0] == '/') return working_dir;
  std::string rel = working_dir;
  if (StartsWith(rel, "./")) rel = rel.substr(2);
  return cwd == "/" ? "/" + rel : cwd + "/" + rel;
}

Status ResolveJobEnv(JobSpec& job, const KeyValues& launcher_env) {
  KeyValues env = ForwardedEnv(launcher_env, job.forward_env);
  const std::string* inherited_path = Find(env, "PYTHONPATH");
  std::string pythonpath = job.working_dir;
  if (inherited_path != nullptr && !inherited_path->empty()) pythonpath += ":" + *inherited_path;
  if (std::string problem = EnvEntryProblem("PYTHONPATH", pythonpath); !problem.empty())
    return Status::InvalidArgument("the working directory put first on PYTHONPATH: " + problem);
  MergeEnv(env, {{"PYTHONPATH", pythonpath}});

  const std::string* ds_env_file = Find(launcher_env, "DS_ENV_FILE");
  DS_ASSIGN_OR_RETURN(DotEnv deepspeed,
                      LoadDeepSpeedEnvFiles(HomeOf(launcher_env), job.working_dir,
                                            ds_env_file == nullptr ? "" : *ds_env_file));
  MergeEnv(env, deepspeed);
  DS_ASSIGN_OR_RETURN(DotEnv dotenv, LoadDotEnvFiles(HomeOf(launcher_env), job.working_dir));
  MergeEnv(env, dotenv);
  MergeEnv(env, job.env);
  job.env = std::move(env);
  return Status::OK();
}

}  // namespace ds
