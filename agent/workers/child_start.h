// StartChild: the one routine that starts a worker's process, cold
// (WorkerProcess, worker_process.h) or a warm spare (agent/warm/spare.h), so
// that the two never drift apart again (the spare's copy once lost
// PR_SET_PTRACER). It forks with signals blocked; the child, in this order,
// makes its own process group, asks for SIGKILL when the agent dies (and
// _exit(137) when it already has), lets the agent's stack tools trace it
// (Yama's PR_SET_PTRACER), takes its stdio, closes on exec every descriptor
// of the agent's but the ones passed, resets every signal, binds its cores,
// lowers its priority if asked, enters its working directory and execs. The
// caller builds everything before the call; the child makes only
// async-signal-safe calls. Thread-safe (nothing shared).
#pragma once

#include <sched.h>
#include <sys/types.h>

#include "common/status.h"

namespace ds {

struct ChildStart {
  char* const* argv = nullptr;      // argv[0] is searched in PATH
  char* const* envp = nullptr;      // the complete environment
  int stdin_fd = -1;                // -1: /dev/null
  int stdout_fd = -1;               // required
  int stderr_fd = -1;               // required; the child's reasons for exit 127 go here
  int control_fd = -1;              // >= 0: passed on as kControlFd (the reshape channel, control_channel.h)
  int keep_fd = -1;                 // >= 0: passed on at its own number (a warm spare's socket)
  const cpu_set_t* cpus = nullptr;  // sched_setaffinity before exec; nullptr = inherit
  bool low_priority = false;        // nice 19 (a warm spare while it imports)
  const char* working_dir = "";     // "" = inherit
};

// Forks and execs `c` as above; the parent also puts the child in its own
// group (no race with an early signal to it). Returns the child's pid; an
// exec failure is the child's exit code 127 with the reason on its stderr.
// IOError naming fork when it fails.
Result<pid_t> StartChild(const ChildStart& c);

}  // namespace ds
