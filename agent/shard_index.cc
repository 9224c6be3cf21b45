#include "agent/shard_index.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "wire/snapshot_handoff.h"

namespace ds {

void ShardIndex::Put(const HeldShard& h) {
  std::lock_guard<std::mutex> lock(mu_);
  held_[{h.entry.step, h.entry.id.set, h.entry.shard}] = h;
}

void ShardIndex::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  held_.clear();
}

std::optional<HeldShard> ShardIndex::Find(int64_t step, const std::string& set, uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find({step, set, shard});
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

std::vector<HeldShard> ShardIndex::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldShard> out;
  for (const auto& [k, h] : held_) out.push_back(h);
  return out;
}

bool ShardIndex::HasNewer(const msg::ShardEntry& e) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, h] : held_) {
    const msg::ShardEntry& n = h.entry;
    if (n.step > e.step && n.shard == e.shard && n.origin == e.origin && n.id.run == e.id.run) return true;
  }
  return false;
}

uint32_t ShardIndex::CountAt(int64_t step, const std::string& set) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t n = 0;
  for (auto it = held_.lower_bound({step, set, 0});
       it != held_.end() && std::get<0>(it->first) == step && std::get<1>(it->first) == set; ++it)
    ++n;
  return n;
}

std::vector<msg::ShardEntry> ShardIndex::DropLocked(const SavePredicate& doomed) {
  std::vector<msg::ShardEntry> gone;
  for (auto it = held_.begin(); it != held_.end();) {
    const msg::ShardEntry& e = it->second.entry;
    if (!doomed(e.step, e.id)) {
      ++it;
      continue;
    }
    gone.push_back(e);
    it = held_.erase(it);
  }
  return gone;
}

std::vector<msg::ShardEntry> ShardIndex::DropIf(const SavePredicate& doomed) {
  std::lock_guard<std::mutex> lock(mu_);
  return DropLocked(doomed);
}

std::vector<msg::ShardEntry> ShardIndex::Prune(int keep, const std::string& run) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> steps;  // the run's steps held, oldest first
  for (const auto& [k, h] : held_)
    if (h.entry.id.run == run) steps.insert(h.entry.step);
  if (static_cast<int>(steps.size()) <= std::max(keep, 1)) return {};
  const int64_t oldest_kept = *std::prev(steps.end(), std::max(keep, 1));
  return DropLocked([&](int64_t step, const msg::SnapshotId& id) { return id.run == run && step < oldest_kept; });
}

void RemoveStepDirs(const Dir& root, const std::vector<msg::ShardEntry>& gone) {
  std::set<std::pair<int64_t, std::string>> saves;
  for (const msg::ShardEntry& e : gone) saves.emplace(e.step, e.id.set);
  for (const auto& [step, set] : saves)
    if (Status st = root.RemoveTree(SnapshotStepDirName(step, set)); !st.ok())
      DS_LOG(Warn, Ckpt) << "snapshots: " << st.message();
}

}  // namespace ds
