#include "launcher/coordinator/snapshot_index.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {

void SnapshotIndex::Apply(int node, const msg::SnapshotHeld& m) {
  for (const msg::ShardEntry& e : m.removed) held_.erase({e.step, e.shard, node, e.tier});
  for (const msg::ShardEntry& e : m.added) {
    held_[{e.step, e.shard, node, e.tier}] = Held{e.world, e.origin};
    newest_ever_ = std::max(newest_ever_, e.step);
  }
}

void SnapshotIndex::Forget(int node) {
  std::erase_if(held_, [node](const auto& kv) { return std::get<2>(kv.first) == node; });
}

namespace {
// Lower is better: the writer's own memory, then a replica in memory, then a disk.
int Rank(int holder, const ShardPick& p) {
  if (p.tier == 1) return p.origin == static_cast<uint32_t>(holder) ? 0 : 1;
  return 2;
}
}  // namespace

RecoveryChoice SnapshotIndex::Decide(const std::vector<bool>& alive, const std::set<int64_t>& excluded) const {
  // step -> shard -> best pick among the living; step -> world
  std::map<int64_t, std::map<uint32_t, ShardPick>> best;
  std::map<int64_t, uint32_t> world;
  for (const auto& [key, h] : held_) {
    const auto& [step, shard, node, tier] = key;
    if (node < 0 || node >= static_cast<int>(alive.size()) || !alive[node] || excluded.count(step)) continue;
    world[step] = h.world;
    ShardPick p{shard, node, h.origin, tier};
    auto [it, fresh] = best[step].emplace(shard, p);
    if (!fresh && Rank(node, p) < Rank(it->second.holder, it->second)) it->second = p;
  }
  RecoveryChoice c;
  for (auto it = best.rbegin(); it != best.rend(); ++it) {
    const uint32_t w = world[it->first];
    if (it->second.size() != w) continue;  // every shard 0..w-1 held (shard < world by construction)
    c.step = it->first;
    c.world = w;
    for (const auto& [shard, p] : it->second) {
      c.picks.push_back(p);
      c.from_disk = c.from_disk || p.tier == 2;
    }
    break;
  }
  if (newest_ever_ > c.step) {
    c.newest = newest_ever_;
    std::set<uint32_t> have;
    uint32_t w = 0;
    auto it = best.find(newest_ever_);
    if (it != best.end()) {
      for (const auto& [shard, p] : it->second) have.insert(shard);
      w = world[newest_ever_];
    }
    for (const auto& [key, h] : held_)  // the world of a step nobody living holds
      if (std::get<0>(key) == newest_ever_) w = std::max(w, h.world);
    for (uint32_t s = 0; s < w; ++s)
      if (!have.count(s)) c.newest_missing.push_back(s);
  }
  return c;
}

std::string DescribeRecovery(const RecoveryChoice& c, const std::vector<std::string>& hosts) {
  auto host = [&](size_t i) { return i < hosts.size() ? hosts[i] : fmt::format("node {}", i); };
  std::string lost;
  if (c.newest > c.step) {
    std::vector<std::string> shards;
    for (uint32_t s : c.newest_missing) shards.push_back(std::to_string(s));
    lost = shards.empty() ? fmt::format("step {} is incomplete", c.newest)
                          : fmt::format("step {} lost shard{} {} with the failed nodes", c.newest,
                                        shards.size() == 1 ? "" : "s", fmt::join(shards, ", "));
  }
  if (c.step < 0)
    return lost.empty() ? "no snapshot or checkpoint held by any node: starting from scratch"
                        : fmt::format("no complete snapshot or checkpoint left: starting from scratch ({})", lost);
  // Count the picks by where they come from, in a stable order.
  std::vector<std::pair<std::string, int>> parts;
  auto add = [&](const std::string& what) {
    auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == what; });
    if (it == parts.end()) parts.emplace_back(what, 1);
    else ++it->second;
  };
  for (const ShardPick& p : c.picks) {
    if (p.tier == 2) add(fmt::format("from {}'s disk", host(p.holder)));
    else if (p.origin == static_cast<uint32_t>(p.holder)) add("from memory");
    else add(fmt::format("from {}'s replica of {}", host(p.holder), host(p.origin)));
  }
  std::vector<std::string> words;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto& [what, n] = parts[i];
    words.push_back(i == 0 ? fmt::format("{} shard{} {}", n, n == 1 ? "" : "s", what) : fmt::format("{} {}", n, what));
  }
  std::string out = fmt::format("resuming from step {}: {}", c.step, fmt::join(words, ", "));
  if (!lost.empty()) out += fmt::format("; {}, so an older step{}", lost, c.from_disk ? " from disk" : "");
  return out;
}

}  // namespace ds
