#include "launcher/report/job_record.h"

#include <signal.h>

#include "common/dstrain_exit.h"
#include "launcher/report/root_cause.h"

namespace ds {

Failure FailureOf(const WorkerRecord& w) {
  Failure f;
  f.time = w.end_time;
  f.host = w.host;
  f.rank = w.rank;
  f.pid = w.pid;
  f.exit_code = w.exit_code;
  f.signal = w.signal;
  f.hung = w.hung;
  f.error = w.error;
  f.last_lines = w.last_lines;
  return f;
}

void JobRecord::OnAssigned(int rank, int node, const std::string& host) {
  // A node's workers are assigned in local-rank order (assign_builder), so
  // its local rank is how many of the node's workers this generation came before.
  const int local_rank = assigned_on_node_[node]++;
  WorkerRecord w;
  w.rank = rank;
  w.node = node;
  w.host = host;
  auto old = workers_.find(rank);
  if (old != workers_.end() && old->second.ExitedOk()) --num_exited_ok_;  // replaced
  workers_[rank] = std::move(w);
  if (mux_) mux_->AddRank(rank, host, local_rank);
}

void JobRecord::OnStarted(int rank, int pid) {
  auto it = workers_.find(rank);
  if (it == workers_.end() || !WorkerPhaseMoveAllowed(it->second.phase, WorkerPhase::kRunning)) return;
  it->second.phase = WorkerPhase::kRunning;
  it->second.pid = pid;
  if (++num_started_ == static_cast<int>(workers_.size())) all_started_time = clock_.Now();
}

void JobRecord::OnOutput(int rank, int stream, const std::string& line) {
  auto it = workers_.find(rank);
  if (it == workers_.end()) return;
  if (stream == 2 && it->second.traceback_seq == 0 && line.find("Traceback (most recent call last):") != std::string::npos) {
    it->second.traceback_seq = ++seq_;
    it->second.traceback_time = std::chrono::system_clock::now();
  }
  auto& lines = it->second.last_lines;
  lines.push_back(line);
  if (lines.size() > kLastLines) lines.pop_front();
  if (mux_) mux_->Line(rank, stream, line);
}

void JobRecord::OnProgress(int rank, int stream, const std::string& text) {
  if (mux_ && workers_.count(rank) != 0) mux_->Progress(rank, stream, text);
}

bool JobRecord::OnExited(int rank, int pid, int exit_code, int signal, bool hung, TorchError error) {
  auto it = workers_.find(rank);
  if (it == workers_.end() || !WorkerPhaseMoveAllowed(it->second.phase, WorkerPhase::kExited)) return false;
  WorkerRecord& w = it->second;
  w.phase = WorkerPhase::kExited;
  if (pid != 0) w.pid = pid;
  w.exit_code = exit_code;
  w.signal = signal;
  w.hung = hung;
  w.end_seq = ++seq_;
  w.end_time = std::chrono::system_clock::now();
  bool failed = exit_code != 0 || signal != 0 || hung;
  if (failed && !error.message.empty()) w.error = BoundForWire(std::move(error));
  // After the first failure the generation is being stopped: SIGTERM, then
  // SIGKILL after the grace. A rank that had already raised (a traceback, an
  // error file) failed on its own even when the stop ended it.
  w.stopped = failed && first_failure_ && !hung && (signal == SIGTERM || signal == SIGKILL) &&
              w.traceback_seq == 0 && w.error.message.empty();
  if (w.ExitedOk()) ++num_exited_ok_;
  if (failed && !first_failure_) {
    first_failure_ = FailureOf(w);
    first_failure_time = clock_.Now();
  }
  return failed;
}

void JobRecord::RecordFailure(Failure f) {
  if (first_failure_ && !(f.rank < 0 && f.signal == 0 && FirstFailureLostAPeer())) return;
  if (first_failure_) {  // the time the generation began to stop stays
    first_failure_ = std::move(f);
    return;
  }
  first_failure_ = std::move(f);
  first_failure_time = clock_.Now();
}

bool JobRecord::FirstFailureLostAPeer() const {
  if (first_failure_->rank < 0) return false;
  auto it = workers_.find(first_failure_->rank);
  if (it == workers_.end()) return false;
  const WorkerRecord& w = it->second;
  return IsCollateralError(w) || (w.signal == 0 && w.exit_code == kDstrainExitComm);
}

std::optional<Failure> JobRecord::RootCause() const {
  if (!first_failure_ || first_failure_->rank < 0) return first_failure_;  // an agent lost, a signal: not a rank's
  return ChooseRootCause(*this).cause;
}

int JobRecord::ExitCode() const {
  const std::optional<Failure> cause = RootCause();
  return cause ? cause->ProcessExitCode() : 0;
}

void JobRecord::NewGeneration(int generation) {
  if (in_place_failed_ && !restart_causes_.empty()) restart_causes_.back().in_place_failed = std::move(*in_place_failed_);
  else if (first_failure_) restart_causes_.push_back(*RootCause());
  in_place_failed_.reset();
  generation_ = generation;
  first_failure_.reset();
  workers_.clear();
  assigned_on_node_.clear();
  num_started_ = 0;
  num_exited_ok_ = 0;
  if (mux_) mux_->Marker("--- dslaunch: restarted, generation " + std::to_string(generation) + " ---");
}

void JobRecord::InPlaceRecoveryFailed(std::string why) { in_place_failed_ = std::move(why); }

bool JobRecord::AllExitedOk() const {
  return !workers_.empty() && num_exited_ok_ == static_cast<int>(workers_.size());
}

}  // namespace ds
