// Exit codes of dslaunch (ninja's exit_status.h). Only main.cc (and the run
// path it calls) turns a Status or a worker's end into one of these.
//
//   0        every worker exited 0 (or --help, --version, --dry-run, env)
//   1        internal error or a launch failure that is not the workers' fault
//            (agents could not be started, coordinator error)
//   2        usage or input error: bad option, hostfile, job file, selection
//   N        the first failing worker exited with code N (1..125)
//   128+S    the first failing worker was killed by signal S (e.g. 137 = SIGKILL)
#pragma once

namespace ds {

enum ExitStatus : int {
  kExitSuccess = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitSignalBase = 128,  // + signal number
};

}  // namespace ds
