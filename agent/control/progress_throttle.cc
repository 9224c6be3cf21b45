#include "agent/control/progress_throttle.h"

namespace ds {

bool ProgressThrottle::Offer(int rank, int stream, const std::string& text, TimePoint now) {
  auto [it, first] = streams_.try_emplace({rank, stream});
  Stream& s = it->second;
  if (first || now - s.last_sent >= interval_) {
    s.last_sent = now;
    s.kept.reset();
    return true;
  }
  s.kept = text;
  return false;
}

void ProgressThrottle::Completed(int rank, int stream) {
  auto it = streams_.find({rank, stream});
  if (it != streams_.end()) it->second.kept.reset();
}

std::vector<ProgressThrottle::Update> ProgressThrottle::TakeDue(TimePoint now) {
  std::vector<Update> due;
  for (auto& [key, s] : streams_) {
    if (!s.kept || now - s.last_sent < interval_) continue;
    due.push_back({key.first, key.second, std::move(*s.kept)});
    s.kept.reset();
    s.last_sent = now;
  }
  return due;
}

std::optional<ProgressThrottle::TimePoint> ProgressThrottle::NextDeadline() const {
  std::optional<TimePoint> next;
  for (const auto& [key, s] : streams_)
    if (s.kept && (!next || s.last_sent + interval_ < *next)) next = s.last_sent + interval_;
  return next;
}

}  // namespace ds
