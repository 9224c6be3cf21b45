// RunJob: the launch path of `dslaunch run`: reads .dslaunch_env, picks the
// spawner (local when every host is this machine), starts the coordinator,
// starts one dsagent per node, streams worker output, handles SIGINT/SIGTERM
// (stop every worker of this job on every node, nothing else), prints the
// summary and returns dslaunch's exit code (exit_status.h): 0, the first
// failing worker's code, 128+signal, 1 for launch failures, 2 for input
// errors. Blocks until the job is over. Call once per process (it handles
// signals).
#pragma once

#include <memory>
#include <string>

#include "launcher/cmd/cli.h"
#include "launcher/config/plan.h"
#include "launcher/spawn/spawner.h"

namespace ds {

int RunJob(const LaunchPlan& plan, const CliOptions& cli);

// The spawner for `launcher` ("auto", "local", "ssh", "pdsh"). "auto" means
// local when every host of the plan is this machine (IsLocalHost), else ssh.
// InvalidArgument for a launcher this build cannot provide.
Result<std::unique_ptr<Spawner>> MakeSpawner(const std::string& launcher, const LaunchPlan& plan,
                                             const CliOptions& cli);
// "local" or "ssh" after resolving "auto".
std::string ResolveLauncher(const std::string& launcher, const LaunchPlan& plan);

// Path of a sibling binary of dslaunch: `override` if set, else
// <dir of dslaunch>/<name>, else <dir>/../<subdir>/<name> (the build tree).
std::string SiblingBinary(const std::string& name, const std::string& subdir, const std::string& override_path);

}  // namespace ds
