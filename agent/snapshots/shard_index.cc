#include "agent/snapshots/shard_index.h"

#include <algorithm>
#include <climits>
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

std::vector<msg::ShardEntry> ShardIndex::Prune(int keep, const std::string& run, const msg::SnapshotPlan& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> settled, in_flight;  // the run's steps held, oldest first
  for (const auto& [k, h] : held_)
    if (h.entry.id.run == run) (h.entry.step <= plan.complete ? settled : in_flight).insert(h.entry.step);
  // The oldest step of `steps` kept when `n` are.
  auto oldest_kept = [](const std::set<int64_t>& steps, int n) {
    return static_cast<int>(steps.size()) <= n ? INT64_MIN : *std::prev(steps.end(), n);
  };
  const int64_t settled_from = oldest_kept(settled, std::max(keep, 1));
  const int64_t in_flight_from = oldest_kept(in_flight, kMaxInFlight);
  return DropLocked([&](int64_t step, const msg::SnapshotId& id) {
    if (id.run != run) return false;
    if (std::find(plan.protect.begin(), plan.protect.end(), msg::SaveRef{step, id.set}) != plan.protect.end())
      return false;
    return step < (step <= plan.complete ? settled_from : in_flight_from);
  });
}

void RemoveStepDirs(const Dir& root, const std::vector<msg::ShardEntry>& gone) {
  std::set<std::pair<int64_t, std::string>> saves;
  for (const msg::ShardEntry& e : gone) saves.emplace(e.step, e.id.set);
  for (const auto& [step, set] : saves)
    if (Status st = root.RemoveTree(SnapshotStepDirName(step, set)); !st.ok())
      DS_LOG(Warn, Ckpt) << "snapshots: " << st.message();
}

}  // namespace ds
