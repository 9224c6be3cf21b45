#include "launcher/report/job_record.h"

namespace ds {

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
  if (it == workers_.end() || it->second.started) return;
  it->second.started = true;
  it->second.pid = pid;
  if (++num_started_ == static_cast<int>(workers_.size())) all_started_time = clock_.Now();
}

void JobRecord::OnOutput(int rank, int stream, const std::string& line) {
  auto it = workers_.find(rank);
  if (it == workers_.end()) return;
  auto& lines = it->second.last_lines;
  lines.push_back(line);
  if (lines.size() > kLastLines) lines.pop_front();
  if (mux_) mux_->Line(rank, stream, line);
}

bool JobRecord::OnExited(int rank, int pid, int exit_code, int signal, bool hung, TorchError error) {
  auto it = workers_.find(rank);
  if (it == workers_.end() || it->second.exited) return false;
  WorkerRecord& w = it->second;
  w.exited = true;
  if (pid != 0) w.pid = pid;
  w.exit_code = exit_code;
  w.signal = signal;
  w.hung = hung;
  bool failed = exit_code != 0 || signal != 0 || hung;
  if (w.ExitedOk()) ++num_exited_ok_;
  if (failed && !error.message.empty()) w.error = BoundForWire(std::move(error));
  if (failed && !first_failure_) {
    Failure f;
    f.time = std::chrono::system_clock::now();
    f.host = w.host;
    f.rank = rank;
    f.pid = w.pid;
    f.exit_code = exit_code;
    f.signal = signal;
    f.hung = hung;
    f.error = w.error;
    f.last_lines = w.last_lines;
    first_failure_ = std::move(f);
    first_failure_time = clock_.Now();
  }
  return failed;
}

void JobRecord::RecordFailure(Failure f) {
  if (first_failure_) return;
  first_failure_ = std::move(f);
  first_failure_time = clock_.Now();
}

void JobRecord::NewGeneration(int generation) {
  if (first_failure_) restart_causes_.push_back(std::move(*first_failure_));
  first_failure_.reset();
  workers_.clear();
  assigned_on_node_.clear();
  num_started_ = 0;
  num_exited_ok_ = 0;
  if (mux_) mux_->Marker("--- dslaunch: restarted, generation " + std::to_string(generation) + " ---");
}

bool JobRecord::AllExitedOk() const {
  return !workers_.empty() && num_exited_ok_ == static_cast<int>(workers_.size());
}

}  // namespace ds
