#include "agent/shard_index.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "runtime/checkpoint_files.h"

namespace ds {

void ShardIndex::Put(const HeldShard& h) {
  std::lock_guard<std::mutex> lock(mu_);
  held_[{h.entry.step, h.entry.shard}] = h;
}

void ShardIndex::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  held_.clear();
}

std::optional<HeldShard> ShardIndex::Find(int64_t step, uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find({step, shard});
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

std::vector<HeldShard> ShardIndex::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldShard> out;
  for (const auto& [k, h] : held_) out.push_back(h);
  return out;
}

uint32_t ShardIndex::CountAt(int64_t step) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (auto it = held_.lower_bound({step, 0}); it != held_.end() && it->first.first == step; ++it) ++n;
  return n;
}

std::vector<msg::ShardEntry> ShardIndex::Drop(int64_t step) {
  std::vector<msg::ShardEntry> gone;
  for (auto it = held_.lower_bound({step, 0}); it != held_.end() && it->first.first == step;) {
    gone.push_back(it->second.entry);
    it = held_.erase(it);
  }
  return gone;
}

std::vector<msg::ShardEntry> ShardIndex::Prune(int keep) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> steps;
  for (const auto& [k, h] : held_) steps.insert(k.first);
  std::vector<msg::ShardEntry> gone;
  for (auto it = steps.begin(); static_cast<int>(std::distance(it, steps.end())) > std::max(keep, 1); ++it) {
    auto dropped = Drop(*it);
    gone.insert(gone.end(), dropped.begin(), dropped.end());
  }
  return gone;
}

std::vector<msg::ShardEntry> ShardIndex::DropAbove(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> steps;
  for (const auto& [k, h] : held_)
    if (k.first > step) steps.insert(k.first);
  std::vector<msg::ShardEntry> gone;
  for (int64_t s : steps) {
    auto dropped = Drop(s);
    gone.insert(gone.end(), dropped.begin(), dropped.end());
  }
  return gone;
}

void RemoveStepDirs(const Dir& root, const std::vector<msg::ShardEntry>& gone) {
  std::set<int64_t> steps;
  for (const msg::ShardEntry& e : gone) steps.insert(e.step);
  for (int64_t step : steps)
    if (Status st = root.RemoveTree(rt::StepDirName(step)); !st.ok())
      DS_LOG(Warn, Ckpt) << "snapshots: " << st.message();
}

}  // namespace ds
