// WorkerProcess: one worker started by the agent, in its own process group
// (pgid == pid), stdin from /dev/null (or a pipe holding one line, kept open
// while the object lives: the launch tree's ssh commands), stdout/stderr on
// pipes the agent reads line by line (or, with WorkerLaunch::pty, each on a
// pseudo-terminal of its own: the worker sees two terminals, the streams stay
// apart), PR_SET_PDEATHSIG(SIGKILL) as an extra guard should the agent
// die, optionally a CPU affinity set between fork and exec and a control
// channel (control_channel.h) for in-place recovery. The command is exec'd directly with an explicit environment: values
// are data, never shell text. Stop = signal the whole group. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/workers/output_lines.h"
#include "common/status.h"
#include "wire/client_conn.h"
#include "wire/frame_io.h"

namespace ds {

// How much of one worker pipe the agent reads per wake-up, and at most when
// it drains a pipe after its worker exited.
constexpr size_t kPipeReadPerWake = 16 * 1024;
constexpr size_t kPipeDrainLimit = 1 << 20;

struct WorkerLaunch {
  std::vector<std::string> argv;   // argv[0] is searched in PATH
  KeyValues env;                   // the complete environment
  std::string working_dir;         // "" = inherit
  std::vector<int> cpus;           // sched_setaffinity in the child before exec; empty = inherit
  // Not empty: stdin is a pipe that holds this line (newline added), and
  // its write end stays open until the WorkerProcess is destroyed (EOF then).
  std::string stdin_line;
  // true: output lines exactly as written ('\r' kept, no progress updates),
  // for commands whose bytes are logged escaped (the launch tree's ssh).
  bool raw_lines = false;
  // Set: stdout and stderr are each the slave of a pseudo-terminal of this
  // size (raw mode: no "\r\n" translation, so the bytes are the worker's), so
  // programs that colour or draw bars only on a terminal do so (--pty). Not a
  // controlling terminal: the worker keeps its own process group, not a session.
  struct PtySize {
    uint16_t columns = 80;
    uint16_t rows = 24;
  };
  std::optional<PtySize> pty;
  // true: a control channel (control_channel.h) whose worker end the worker
  // finds at kControlFd, named by DSLAUNCH_CONTROL_FD in `env` (the caller's).
  bool control = false;
};

class WorkerProcess {
 public:
  // `stream`: 1 stdout, 2 stderr, | msg::kOutputProgress for an update of
  // the line in progress (its visible text).
  using LineSink = std::function<void(int stream, const std::string& line)>;

  // Forks and execs. An exec failure shows up as exit code 127 with the
  // reason on the worker's stderr. Error only when fork/pipe fail.
  static Result<std::unique_ptr<WorkerProcess>> Start(const WorkerLaunch& launch);
  // One output stream of a worker of `launch`: ends[0] read by the agent,
  // ends[1] the worker's; a pipe, or a pseudo-terminal with launch.pty.
  // Both close-on-exec; on error neither is open.
  static Status OpenOutput(const WorkerLaunch& launch, int ends[2]);
  // A worker this class did not fork: a warm spare handed its assignment
  // (warm_spare.h), `pid` the leader of its own process group, `out`/`err`
  // the read ends of its stdout/stderr pipes.
  static std::unique_ptr<WorkerProcess> Adopt(pid_t pid, UniqueFd out, UniqueFd err);
  ~WorkerProcess();  // SIGKILLs the group if still running

  pid_t pid() const { return pid_; }
  int stdout_fd() const { return out_.get(); }
  int stderr_fd() const { return err_.get(); }
  int control_fd() const { return ctl_.get(); }  // the agent's end; -1 = none, or closed
  void CloseControl() { ctl_.Reset(); }
  // Reads up to `max_bytes` of what is available on `fd` (one of the two
  // pipes, or pseudo-terminal masters: EIO there is the end) and emits whole
  // lines, collapsed, and progress updates of the line in progress
  // (OutputLines; `stream` then carries msg::kOutputProgress); at EOF emits
  // the partial last line and closes the pipe. Leaves the rest for the next call (poll is
  // level-triggered), so a fast writer cannot hold the caller.
  void ReadPipe(int fd, const LineSink& sink, size_t max_bytes = kPipeReadPerWake);
  // After the worker exited: reads each pipe until it would block (at most
  // kPipeDrainLimit bytes: a leftover child may hold it open and keep
  // writing), then flushes partial lines and closes them.
  void DrainAndClose(const LineSink& sink);
  // Sends `sig` to the worker's process group (ESRCH ignored).
  void SignalGroup(int sig);

  // Exit bookkeeping, set by the agent's reaper.
  bool exited = false;
  int exit_code = 0;
  int term_signal = 0;

 private:
  WorkerProcess() = default;
  pid_t pid_ = -1;
  UniqueFd in_, out_, err_, ctl_;
  OutputLines out_lines_, err_lines_;
};

}  // namespace ds
