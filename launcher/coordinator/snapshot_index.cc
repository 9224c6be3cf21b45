#include "launcher/coordinator/snapshot_index.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace ds {

void SnapshotIndex::Apply(int node, const msg::SnapshotHeld& m) {
  for (const msg::ShardEntry& e : m.removed) held_.erase({e.step, e.id, e.shard, node, e.tier});
  for (const msg::ShardEntry& e : m.added) {
    held_[{e.step, e.id, e.shard, node, e.tier}] = e.origin;
    Newest& n = newest_[e.id.run];
    if (e.step > n.step) n = Newest{e.step, {e.id}};
    else if (e.step == n.step) n.saves.insert(e.id);
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
using Picks = std::map<SaveKey, std::map<uint32_t, ShardPick>>;  // save -> shard -> best holder among the living

// The newest whole save of this run; when it has none, of an earlier run
// with its config (any config while `config` is not known). Of two saves of
// a step the map's order puts the later run's, then the larger set, last.
Picks::const_reverse_iterator Choose(const Picks& best, const std::string& run, const std::optional<std::string>& config) {
  for (int pass = 0; pass < 2; ++pass)
    for (auto it = best.rbegin(); it != best.rend(); ++it) {  // newest step first
      const msg::SnapshotId& id = it->first.second;
      const bool eligible = pass == 0 ? id.run == run : id.run != run && (!config || id.config == *config);
      if (eligible && it->second.size() == id.world) return it;  // every shard 0..world-1 (shard < world by decoding)
    }
  return best.rend();
}
}  // namespace

RecoveryChoice SnapshotIndex::Decide(const std::vector<bool>& alive, const std::string& run,
                                     const std::set<Save>& excluded) const {
  auto living = [&](int node) { return node >= 0 && node < static_cast<int>(alive.size()) && alive[node]; };
  Picks best;
  for (const auto& [key, origin] : held_) {
    const auto& [step, id, shard, node, tier] = key;
    if (!living(node) || excluded.count({step, id.set})) continue;
    ShardPick p{shard, node, origin, tier};
    auto [it, fresh] = best[{step, id}].emplace(shard, p);
    if (!fresh && Rank(node, p) < Rank(it->second.holder, it->second)) it->second = p;
  }
  // This run's config hash, known once it saved anything.
  const auto mine = newest_.find(run);
  const std::optional<std::string> config =
      mine == newest_.end() ? std::nullopt : std::optional<std::string>(mine->second.saves.begin()->config);

  RecoveryChoice c;
  if (auto chosen = Choose(best, run, config); chosen != best.rend()) {
    c.step = chosen->first.first;
    c.id = chosen->first.second;
    c.earlier_run = c.id.run != run;
    for (const auto& [shard, p] : chosen->second) {
      c.picks.push_back(p);
      c.from_disk = c.from_disk || p.tier == 2;
    }
  }
  FindLoss(best, run, config.has_value(), &c);
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

void SnapshotIndex::FindLoss(const std::map<std::pair<int64_t, msg::SnapshotId>, std::map<uint32_t, ShardPick>>& best,
                                 const std::string& run, bool own, RecoveryChoice* c) const {
  // The newest save considered (this run's once it saved anything, else the
  // earlier runs'; of several saves of that step, the one the living hold
  // most of), when it is newer than the choice: what of it is lost.
  std::optional<SaveKey> newest;
  size_t newest_have = 0;
  for (const auto& [r, n] : newest_) {
    if (own ? r != run : r == run) continue;
    for (const msg::SnapshotId& id : n.saves) {
      auto it = best.find({n.step, id});
      const size_t have = it == best.end() ? 0 : it->second.size();
      if (!newest || n.step > newest->first || (n.step == newest->first && have >= newest_have)) {
        newest = SaveKey{n.step, id};
        newest_have = have;
      }
    }
  }
  if (!newest || newest->first <= c->step) return;
  c->newest = newest->first;
  c->newest_earlier_run = newest->second.run != run;
  auto it = best.find(*newest);
  for (uint32_t s = 0; s < newest->second.world; ++s)
    if (it == best.end() || !it->second.count(s)) c->newest_missing.push_back(s);
}

std::string DescribePicks(const RecoveryChoice& c, const std::vector<std::string>& hosts) {
  auto host = [&](size_t i) { return i < hosts.size() ? hosts[i] : fmt::format("node {}", i); };
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
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string DescribeRecovery(const RecoveryChoice& c, const std::vector<std::string>& hosts) {
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
  const std::string which =
      c.earlier_run ? fmt::format(" of an earlier run ({}, {} rank{} at ZeRO stage {})", c.id.run, c.id.world,
                                  c.id.world == 1 ? "" : "s", c.id.zero_stage)
                    : "";
  std::string out = fmt::format("resuming from step {}{}: {}", c.step, which, DescribePicks(c, hosts));
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
