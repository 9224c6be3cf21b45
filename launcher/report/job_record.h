// JobRecord: what the launcher knows about every worker of the current
// generation (host, pid, exit), the last 20 output lines per rank, and the
// generation's FIRST failure, which decides dslaunch's exit code (worker's
// code, or 128+signal) and the summary. An elastic restart moves that
// failure to restart_causes() and starts over with a new set of workers.
// Output lines are forwarded to the LogMux.
// Not thread-safe: the coordinator's io thread only.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/torch_error_file.h"
#include "launcher/report/log_mux.h"

namespace ds {

struct WorkerRecord {
  int rank = 0;
  int node = 0;
  std::string host;
  int pid = 0;
  bool started = false;
  bool exited = false;
  int exit_code = 0;   // when signal == 0
  int signal = 0;
  bool hung = false;
  TorchError error;    // from its TORCHELASTIC_ERROR_FILE; message "" = none
  std::deque<std::string> last_lines;  // newest last, at most kLastLines
  bool ExitedOk() const { return exited && exit_code == 0 && signal == 0 && !hung; }
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
  // Records an exit; returns true when it is a failure (code != 0, signal,
  // hung). `error` is what the worker's error file said (bounded again here:
  // BoundForWire), kept only for a failure.
  bool OnExited(int rank, int pid, int exit_code, int signal, bool hung, TorchError error = {});
  // Records a failure that is not a worker's exit; ignored if one is recorded.
  void RecordFailure(Failure f);

  // An elastic restart into `generation`: forgets the workers, keeps the
  // failure that caused it as a restart cause (the next generation starts
  // clean) and marks the per-rank log files.
  void NewGeneration(int generation);

  const std::optional<Failure>& first_failure() const { return first_failure_; }
  const std::vector<Failure>& restart_causes() const { return restart_causes_; }
  const std::map<int, WorkerRecord>& workers() const { return workers_; }
  int num_started() const { return num_started_; }
  bool AllExitedOk() const;
  // 0 when nothing failed, else the first failure's ProcessExitCode().
  int ExitCode() const { return first_failure_ ? first_failure_->ProcessExitCode() : 0; }

  // Clock readings (the record's clock) for the restart notice and the benchmark.
  Clock::time_point all_started_time;
  Clock::time_point first_failure_time;
  Clock::time_point all_stopped_time;
  // "snapshots: ... handed over, replicated ... MB/s" (checkpoint snapshots on), else "".
  std::string snapshot_summary;

 private:
  LogMux* mux_;
  const Clock& clock_;
  std::map<int, WorkerRecord> workers_;
  std::map<int, int> assigned_on_node_;  // node -> workers assigned this generation (the next local rank)
  std::optional<Failure> first_failure_;
  std::vector<Failure> restart_causes_;
  int num_started_ = 0;
  int num_exited_ok_ = 0;  // workers of this generation that exited 0 (O(1) AllExitedOk)
};

}  // namespace ds
