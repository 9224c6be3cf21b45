#include "launcher/coordinator/snapshot_index.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {

void SnapshotIndex::Apply(int node, const msg::SnapshotHeld& m) {
  for (const msg::ShardEntry& e : m.removed) held_.erase({e.step, e.id, e.shard, node, e.tier});
  for (const msg::ShardEntry& e : m.added) {
    held_[{e.step, e.id, e.shard, node, e.tier}] = e.origin;
    ever_.emplace(e.step, e.id);
  }
}

void SnapshotIndex::Forget(int node) {
  std::erase_if(held_, [node](const auto& kv) { return std::get<3>(kv.first) == node; });
}

namespace {
// Lower is better: the writer's own memory, then a replica in memory, then a disk.
int Rank(int holder, const ShardPick& p) {
  if (p.tier == 1) return p.origin == static_cast<uint32_t>(holder) ? 0 : 1;
  return 2;
}
using SaveKey = std::pair<int64_t, msg::SnapshotId>;
}  // namespace

RecoveryChoice SnapshotIndex::Decide(const std::vector<bool>& alive, const std::string& run,
                                     const std::set<Save>& excluded) const {
  auto living = [&](int node) { return node >= 0 && node < static_cast<int>(alive.size()) && alive[node]; };
  // save -> shard -> best pick among the living
  std::map<SaveKey, std::map<uint32_t, ShardPick>> best;
  for (const auto& [key, origin] : held_) {
    const auto& [step, id, shard, node, tier] = key;
    if (!living(node) || excluded.count({step, id.set})) continue;
    ShardPick p{shard, node, origin, tier};
    auto [it, fresh] = best[{step, id}].emplace(shard, p);
    if (!fresh && Rank(node, p) < Rank(it->second.holder, it->second)) it->second = p;
  }
  // This run's config hash, once it saved anything; which saves it considers.
  bool own = false;
  std::string config;
  for (const auto& [step, id] : ever_)
    if (id.run == run) own = true, config = id.config;
  auto considered = [&](const msg::SnapshotId& id) { return own ? id.run == run : id.run != run; };

  RecoveryChoice c;
  auto chosen = best.rend();
  for (int pass = 0; pass < 2 && chosen == best.rend(); ++pass) {
    for (auto it = best.rbegin(); it != best.rend(); ++it) {  // newest step first
      const msg::SnapshotId& id = it->first.second;
      const bool eligible = pass == 0 ? id.run == run : id.run != run && (!own || id.config == config);
      if (eligible && it->second.size() == id.world) {  // every shard 0..world-1 (shard < world by decoding)
        chosen = it;
        break;
      }
    }
  }
  if (chosen != best.rend()) {
    c.step = chosen->first.first;
    c.id = chosen->first.second;
    c.earlier_run = c.id.run != run;
    for (const auto& [shard, p] : chosen->second) {
      c.picks.push_back(p);
      c.from_disk = c.from_disk || p.tier == 2;
    }
  }
  // The newest save considered, and what of it is lost (of several saves of
  // that step, the one the living hold most of).
  const SaveKey* newest = nullptr;
  size_t newest_have = 0;
  for (const SaveKey& k : ever_) {
    if (!considered(k.second)) continue;
    auto it = best.find(k);
    const size_t have = it == best.end() ? 0 : it->second.size();
    if (!newest || k.first > newest->first || (k.first == newest->first && have >= newest_have)) {
      newest = &k;
      newest_have = have;
    }
  }
  if (newest && newest->first > c.step) {
    c.newest = newest->first;
    c.newest_earlier_run = newest->second.run != run;
    auto it = best.find(*newest);
    for (uint32_t s = 0; s < newest->second.world; ++s)
      if (it == best.end() || !it->second.count(s)) c.newest_missing.push_back(s);
  }
  // Earlier runs' saves the living hold, other than the one resumed.
  std::set<SaveKey> kept;
  std::set<std::string> runs;
  for (const auto& [key, origin] : held_) {
    const auto& [step, id, shard, node, tier] = key;
    if (!living(node) || id.run == run || (step == c.step && id == c.id)) continue;
    kept.insert({step, id});
    runs.insert(id.run);
  }
  c.kept_saves = static_cast<int>(kept.size());
  c.kept_runs = static_cast<int>(runs.size());
  return c;
}

std::string DescribeRecovery(const RecoveryChoice& c, const std::vector<std::string>& hosts) {
  auto host = [&](size_t i) { return i < hosts.size() ? hosts[i] : fmt::format("node {}", i); };
  std::string lost;
  if (c.newest > c.step) {
    std::vector<std::string> shards;
    for (uint32_t s : c.newest_missing) shards.push_back(std::to_string(s));
    const char* plural = shards.size() == 1 ? "" : "s";
    if (shards.empty())
      lost = fmt::format("step {}{} is incomplete", c.newest, c.newest_earlier_run ? " of an earlier run" : "");
    else if (c.newest_earlier_run)
      lost = fmt::format("step {} of an earlier run lacks shard{} {}, on no node of this run", c.newest, plural,
                         fmt::join(shards, ", "));
    else
      lost = fmt::format("step {} lost shard{} {} with the failed nodes", c.newest, plural, fmt::join(shards, ", "));
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
  const std::string which =
      c.earlier_run ? fmt::format(" of an earlier run ({}, {} rank{} at ZeRO stage {})", c.id.run, c.id.world,
                                  c.id.world == 1 ? "" : "s", c.id.zero_stage)
                    : "";
  std::string out = fmt::format("resuming from step {}{}: {}", c.step, which, fmt::join(words, ", "));
  if (!lost.empty()) out += fmt::format("; {}, so an older step{}", lost, c.from_disk ? " from disk" : "");
  return out;
}

std::string DescribeKept(const RecoveryChoice& c) {
  if (c.kept_saves == 0) return "";
  return fmt::format("keeping {} saved step{} of {} earlier run{} in the nodes' checkpoint directories: this run "
                     "never prunes or overwrites them",
                     c.kept_saves, c.kept_saves == 1 ? "" : "s", c.kept_runs, c.kept_runs == 1 ? "" : "s");
}

}  // namespace ds
