#include "agent/workers/child_start.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "agent/workers/control_channel.h"
#include "common/subprocess.h"

namespace ds {
namespace {

// In the child: the parts of one message to its stderr, with write(2) only.
void WriteToStderr(std::initializer_list<const char*> parts) {
  for (const char* p : parts) (void)!::write(2, p, std::strlen(p));
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const ChildStart& c, pid_t agent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != agent) ::_exit(137);  // the agent died before prctl
  // Yama's ptrace_scope 1 (Ubuntu's default) lets only a declared tracer and
  // its descendants attach: the agent's hang stack tools (eu-stack, gdb) are
  // its children. It lasts across exec; EINVAL without Yama, which is fine.
  ::prctl(PR_SET_PTRACER, agent, 0, 0, 0);
  const int stdin_fd = c.stdin_fd >= 0 ? c.stdin_fd : ::open("/dev/null", O_RDONLY);
  if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
  ::dup2(c.stdout_fd, 1);
  ::dup2(c.stderr_fd, 2);
  // Nothing of the agent's (sockets, snapshot files) reaches the worker ...
  if (c.keep_fd >= 0)
    CloseOnExecAboveStderr({c.keep_fd});
  else
    CloseOnExecAboveStderr();
  // ... but the worker's end of its control channel, at kControlFd (dup2
  // clears close-on-exec; the same number keeps it, so clear it by hand).
  const int ctl = c.control_fd;
  if (ctl >= 0 && (ctl == kControlFd ? ::fcntl(ctl, F_SETFD, 0) : ::dup2(ctl, kControlFd)) < 0) {
    WriteToStderr({"dsagent: cannot pass the control channel: ", std::strerror(errno), "\n"});
    ::_exit(127);
  }
  // Signals were blocked across fork: the agent's handlers (which write to
  // its self-pipe) must never run in the child.
  ResetSignalsInChild();
  if (c.cpus != nullptr && ::sched_setaffinity(0, sizeof(cpu_set_t), c.cpus) != 0) {
    WriteToStderr({"dsagent: sched_setaffinity failed for the worker's cores\n"});
    ::_exit(127);
  }
  if (c.low_priority) (void)!::setpriority(PRIO_PROCESS, 0, 19);
  if (c.working_dir[0] != '\0' && ::chdir(c.working_dir) != 0) {
    WriteToStderr({"dsagent: cannot start in the working directory ", c.working_dir, ": ", std::strerror(errno),
                   " (set working_dir: in the job file, or start dslaunch in a directory that exists on every "
                   "node)\n"});
    ::_exit(127);
  }
  ::execvpe(c.argv[0], c.argv, c.envp);
  WriteToStderr({"dsagent: cannot run '", c.argv[0], "': ", std::strerror(errno), "\n"});
  ::_exit(127);
}

}  // namespace

Result<pid_t> StartChild(const ChildStart& c) {
  const pid_t agent = ::getpid();
  const pid_t pid = ForkWithSignalsBlocked();
  if (pid < 0) return Status::IOError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) ExecChild(c, agent);
  ::setpgid(pid, pid);  // also here: no race with an early SignalGroup
  return pid;
}

}  // namespace ds
