// WarmSpare: one waiting Python interpreter for the next generation's local
// rank (warm_spares.h). Started like a worker (its own process group, pgid ==
// pid; PR_SET_PDEATHSIG(SIGKILL) with the re-check; the rank's cores; the
// current generation's environment less the variables that vary per
// generation (VariesPerGeneration: RANK, MASTER_PORT, ...) and its working
// directory; /dev/null for
// stdin, stdout and stderr), at nice 19 when the agent may raise it back,
// it runs kWarmShim (warm_shim.h): imports the preload list and reports on
// a private socketpair. HandOff sends the assignment on that socket:
//   u32 length (little-endian), then NUL-separated fields: nice, working
//   directory, cores ("0,1"), n, the n words of the target (script args or
//   -m module args), then the environment's KEY=VALUE entries;
//   stdin, stdout and stderr ride as SCM_RIGHTS on the first byte.
// The spare's pid becomes the worker's. Not thread-safe: the agent's event
// loop only. Owns the process until HandOff succeeds: the destructor
// SIGKILLs its group and reaps it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "agent/warm/command.h"
#include "agent/workers/worker_process.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

enum class SpareState { kImporting, kReady, kFailed, kEnded, kHandedOff };

class WarmSpare {
 public:
  // Forks and execs `start.interpreter -c kWarmShim ...`, importing
  // `preload` for `first` (the script, or "-m"). Error when fork or the
  // socketpair fail.
  static Result<std::unique_ptr<WarmSpare>> Start(const SpareStart& start, const std::string& first,
                                                   const std::vector<std::string>& preload, bool low_priority);
  ~WarmSpare();

  pid_t pid() const { return pid_; }
  SpareState state() const { return state_; }
  const SpareStart& start() const { return start_; }
  // While importing: the socket its report arrives on; -1 otherwise.
  int report_fd() const { return state_ == SpareState::kImporting ? ctl_.get() : -1; }
  // Reads the report: kReady (rss_kib, import_seconds) or kFailed (why).
  void OnReadable();
  // The process ended (reaped by the agent) with wait status `status`.
  void OnExited(int status);
  uint64_t rss_kib() const { return rss_kib_; }
  double import_seconds() const { return import_seconds_; }
  const std::string& why() const { return why_; }  // kFailed/kEnded: in words

  // kReady only: hands `launch` (its env, working directory, cores) with
  // `target` to the spare and returns it as the worker, stdout and stderr
  // on fresh pipes; the spare is spent either way. Error (a line for the
  // log) when the socket refuses: the spare is killed.
  Result<std::unique_ptr<WorkerProcess>> HandOff(const WorkerLaunch& launch, const std::vector<std::string>& target);

 private:
  WarmSpare() = default;
  void Kill();

  pid_t pid_ = -1;
  UniqueFd ctl_;
  SpareStart start_;
  SpareState state_ = SpareState::kImporting;
  std::string report_;  // the report line as far as read
  uint64_t rss_kib_ = 0;
  double import_seconds_ = 0;
  std::string why_;
};

}  // namespace ds
