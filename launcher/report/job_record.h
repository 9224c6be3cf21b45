// JobRecord: what the launcher knows about every worker of the current
// generation (host, pid, exit and when it ended, the first traceback line on
// its stderr, whether it failed on its own or was ended by the stop), the
// last 20 output lines per rank, and the generation's first failure as it
// arrived, which stops the generation. The root cause (root_cause.h) is
// chosen from all of it and decides dslaunch's exit code (the worker's code,
// or 128+signal) and the summary. An elastic restart moves the root cause
// to restart_causes() and starts over with a new set of workers.
// Output lines are forwarded to the LogMux.
// Not thread-safe: the coordinator's io thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/torch_error_file.h"
#include "launcher/report/log_mux.h"
#include "launcher/report/worker_phase.h"

namespace ds {

struct WorkerRecord {
  int rank = 0;
  int node = 0;
  std::string host;
  int pid = 0;
  WorkerPhase phase = WorkerPhase::kAssigned;  // worker_phase.h: its moves are in one table
  int exit_code = 0;   // when signal == 0
  int signal = 0;
  bool hung = false;
  TorchError error;    // from its TORCHELASTIC_ERROR_FILE; message "" = none
  std::deque<std::string> last_lines;  // newest last, at most kLastLines
  // When things reached dslaunch: `seq` orders every event of the record
  // (the order dslaunch saw them), the time is the wall clock's then.
  uint64_t traceback_seq = 0;  // its first "Traceback (most recent call last):" on stderr; 0 = none
  std::chrono::system_clock::time_point traceback_time;
  uint64_t end_seq = 0;        // its exit
  std::chrono::system_clock::time_point end_time;
  bool stopped = false;        // ended by SIGTERM/SIGKILL after the generation's first failure, without a
                               //   traceback or an error file before: the stop's doing
  bool running() const { return phase == WorkerPhase::kRunning; }
  bool exited() const { return phase == WorkerPhase::kExited; }
  bool ExitedOk() const { return exited() && exit_code == 0 && signal == 0 && !hung; }
  // It failed by itself: a non-zero exit, a signal other than the stop's, or hung.
  bool FailedOnItsOwn() const { return exited() && !ExitedOk() && !stopped; }
};

struct Failure {
  std::chrono::system_clock::time_point time;
  std::string host;
  int rank = -1;        // -1: not a worker (agent lost, interrupted, ...)
  int pid = 0;
  int exit_code = 0;
  int signal = 0;
  bool hung = false;
  std::string what;     // for non-worker failures: "agent lost: connection closed"
  TorchError error;     // the worker's own report (TORCHELASTIC_ERROR_FILE); message "" = none
  std::deque<std::string> last_lines;
  std::string cause_note;  // how the root cause was chosen among several failed ranks ("" = the only one)
  std::string in_place_failed;  // a restart cause: why the in-place recovery after it failed before the full
                                //   restart, both one restart ("" = none tried, or it worked)
  // dslaunch's exit code for this failure.
  int ProcessExitCode() const { return signal != 0 ? 128 + signal : exit_code; }
};

class JobRecord {
 public:
  static constexpr size_t kLastLines = 20;
  // `mux` (may be null) and `clock` must outlive the record.
  explicit JobRecord(LogMux* mux = nullptr, const Clock& clock = RealClock()) : mux_(mux), clock_(clock) {}

  void OnAssigned(int rank, int node, const std::string& host);
  void OnStarted(int rank, int pid);
  void OnOutput(int rank, int stream, const std::string& line);
  // The visible text of `rank`'s line in progress (a '\r' update): shown
  // (LogMux::Progress), never kept among the last lines.
  void OnProgress(int rank, int stream, const std::string& text);
  // Records an exit; returns true when it is a failure (code != 0, signal,
  // hung). `error` is what the worker's error file said (bounded again here:
  // BoundForWire), kept only for a failure.
  bool OnExited(int rank, int pid, int exit_code, int signal, bool hung, TorchError error = {});
  // Records a failure that is not a worker's exit; ignored if one is
  // recorded, unless that one was a rank's lost connection (a collective's
  // error, dstrain's exit 3) and this is a host's loss: a peer's socket
  // closing can reach dslaunch before the dead host's link does, and the
  // host is the cause.
  void RecordFailure(Failure f);

  // An elastic restart into `generation`: forgets the workers, keeps the
  // root cause of its failure as a restart cause (the next generation
  // starts clean) and marks the per-rank log files.
  void NewGeneration(int generation);
  // The in-place recovery that began this generation failed (`why`) and the
  // full restart follows: one restart for one failure, so the next
  // NewGeneration adds no restart cause of its own but writes `why` into the
  // one the recovery added. Only after a NewGeneration that added a cause.
  void InPlaceRecoveryFailed(std::string why);

  // The first failure as it arrived (what stopped the generation).
  const std::optional<Failure>& first_failure() const { return first_failure_; }
  // The failure the summary and the exit code name: among the ranks that
  // failed on their own, root_cause.h's choice; else first_failure().
  std::optional<Failure> RootCause() const;
  const std::vector<Failure>& restart_causes() const { return restart_causes_; }
  int generation() const { return generation_; }  // NewGeneration's; 0 before any
  const std::map<int, WorkerRecord>& workers() const { return workers_; }
  int num_started() const { return num_started_; }
  bool AllExitedOk() const;
  // 0 when nothing failed, else the root cause's ProcessExitCode().
  int ExitCode() const;

  // Clock readings (the record's clock) for the restart notice and the benchmark.
  Clock::time_point all_started_time;
  Clock::time_point first_failure_time;
  Clock::time_point all_stopped_time;
  // "snapshots: ... handed over, replicated ... MB/s" (checkpoint snapshots on), else "".
  std::string snapshot_summary;
  // The last hang's stacks, every rank's (hang_report.h StacksFileText); "" = no hang.
  std::string hang_stacks;
  // The file they were written to (<log_dir>/stacks.gen<G>.txt); "" = none written.
  std::string hang_stacks_path;
  // The last hang's report as printed then (hang_report.h HangReportLines:
  // the ranks grouped by stack, the odd ones out first), one line each.
  std::vector<std::string> hang_report;

 private:
  LogMux* mux_;
  const Clock& clock_;
  std::map<int, WorkerRecord> workers_;
  std::map<int, int> assigned_on_node_;  // node -> workers assigned this generation (the next local rank)
  bool FirstFailureLostAPeer() const;  // RecordFailure's rule; first_failure_ is set

  std::optional<Failure> first_failure_;
  std::vector<Failure> restart_causes_;
  int generation_ = 0;
  std::optional<std::string> in_place_failed_;  // InPlaceRecoveryFailed's, for the next NewGeneration
  int num_started_ = 0;
  int num_exited_ok_ = 0;  // workers of this generation that exited 0 (O(1) AllExitedOk)
  uint64_t seq_ = 0;       // the last event's number (WorkerRecord's *_seq)
};

// A worker's failure as the summary describes it.
Failure FailureOf(const WorkerRecord& w);

}  // namespace ds
