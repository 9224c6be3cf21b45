// Evictions (evict.h).
#include "launcher/coordinator/evict.h"

#include <algorithm>

namespace ds {

bool Evictions::Mark(uint32_t node) {
  if (!on_ || marked_.count(node)) return false;
  if (marked_.empty()) mark_step_ = newest_step();
  marked_.insert(node);
  return true;
}

int64_t Evictions::newest_step() const {
  int64_t newest = -1;
  for (const auto& [node, step] : newest_) newest = std::max(newest, step);
  return newest;
}

bool Evictions::OnHeld(uint32_t node, const std::vector<int64_t>& steps, const std::vector<int>& generation) {
  for (int64_t s : steps) newest_[node] = std::max(newest_.count(node) ? newest_[node] : -1, s);
  if (marked_.empty()) return false;
  for (int n : generation) {
    auto it = newest_.find(static_cast<uint32_t>(n));
    if (it == newest_.end() || it->second <= mark_step_) return false;
  }
  return true;
}

std::vector<uint32_t> Evictions::Evict(Clock::time_point now) {
  std::vector<uint32_t> out(marked_.begin(), marked_.end());
  for (uint32_t n : out) until_[n] = now + cooldown_;
  marked_.clear();
  return out;
}

void Evictions::Apply(std::vector<bool>& alive, size_t min_nodes, Clock::time_point now) const {
  size_t left = static_cast<size_t>(std::count(alive.begin(), alive.end(), true));
  for (const auto& [node, until] : until_) {
    if (node >= alive.size() || !alive[node] || now >= until || left <= min_nodes) continue;
    alive[node] = false;
    --left;
  }
}

}  // namespace ds
