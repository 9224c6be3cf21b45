#include "launcher/coordinator/snapshot_tally.h"

#include <algorithm>
#include <array>

namespace ds {
namespace {

std::array<uint64_t msg::SnapshotCounters::*, 8> Fields() {
  using C = msg::SnapshotCounters;
  return {&C::handoffs, &C::handoff_bytes, &C::sent_bytes,  &C::sent_micros,
          &C::persisted_bytes, &C::persist_micros, &C::budget_wait_micros, &C::cpu_micros};
}

}  // namespace

void SnapshotTally::OnHeld(int node, const msg::SnapshotHeld& m) {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return;
  PerNode& n = nodes_[node];
  for (const msg::ShardEntry& e : m.removed) {
    auto it = n.held.find({e.step, e.id.set, e.shard, e.tier});
    if (it == n.held.end()) continue;
    n.bytes_held -= it->second;
    n.held.erase(it);
  }
  for (const msg::ShardEntry& e : m.added) {
    auto [it, fresh] = n.held.try_emplace({e.step, e.id.set, e.shard, e.tier}, e.bytes);
    if (!fresh) continue;
    n.bytes_held += e.bytes;
    if (e.shard == 0 && e.tier == 1 && e.origin == static_cast<uint32_t>(node)) ++saves_;
  }
  // A counter below its last value: the agent began again (a new process).
  bool restarted = false;
  for (auto f : Fields()) restarted = restarted || m.counters.*f < n.last.*f;
  if (restarted)
    for (auto f : Fields()) n.base.*f += n.last.*f;
  n.last = m.counters;
}

void SnapshotTally::Forget(int node) {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return;
  nodes_[node].held.clear();
  nodes_[node].bytes_held = 0;
}

NodeSnapshotFigures SnapshotTally::Node(int node) const {
  NodeSnapshotFigures out;
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) return out;
  const PerNode& n = nodes_[node];
  out.bytes_held = n.bytes_held;
  for (auto f : Fields()) out.totals.*f = n.base.*f + n.last.*f;
  if (n.held.empty()) return out;
  out.newest_step = std::get<0>(n.held.rbegin()->first);  // keys order by step first
  for (auto it = n.held.rbegin(); it != n.held.rend() && std::get<0>(it->first) == out.newest_step; ++it)
    out.newest_in_memory = out.newest_in_memory || std::get<3>(it->first) == 1;
  return out;
}

int64_t SnapshotTally::newest_step() const {
  int64_t s = -1;
  for (const PerNode& n : nodes_)
    if (!n.held.empty()) s = std::max(s, std::get<0>(n.held.rbegin()->first));
  return s;
}

}  // namespace ds
