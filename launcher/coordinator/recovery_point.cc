// RecoveryPoint (recovery_point.h): the recovery point, the one save being
// secured, and what the agents may drop.
#include "launcher/coordinator/recovery_point.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ds {

namespace {
uint8_t TierBit(uint8_t tier) { return tier == 2 ? 2 : 1; }
bool operator==(const msg::SnapshotPlan& a, const msg::SnapshotPlan& b) {
  return a.complete == b.complete && a.protect == b.protect && a.secure == b.secure && a.drop == b.drop;
}
}  // namespace

void RecoveryPoint::Apply(int node, const msg::SnapshotHeld& m) {
  for (const msg::ShardEntry& e : m.removed) Change(node, e, false);
  for (const msg::ShardEntry& e : m.added) Change(node, e, true);
}

void RecoveryPoint::Change(int node, const msg::ShardEntry& e, bool add) {
  if (e.id.run != run_ || e.shard >= e.id.world) return;
  const Key key{e.step, e.id.set};
  auto it = saves_.find(key);
  if (it == saves_.end()) {
    if (!add) return;
    it = saves_.emplace(key, Save{}).first;
    it->second.shards.resize(e.id.world);
  }
  Save& s = it->second;
  if (e.shard >= s.shards.size()) return;  // another world under the same set: cannot be (the set digests it)
  Shard& sh = s.shards[e.shard];
  auto before = [&](const Shard& x) {
    auto o = x.nodes.find(x.origin);
    return std::tuple(!x.nodes.empty(), static_cast<int>(x.nodes.size()) >= copies_, o != x.nodes.end(),
                      o != x.nodes.end() && (o->second & 2));
  };
  const auto [held0, spread0, origin0, disk0] = before(sh);
  sh.origin = e.origin;
  uint8_t& tiers = sh.nodes[node];
  tiers = add ? (tiers | TierBit(e.tier)) : (tiers & ~TierBit(e.tier));
  if (tiers == 0) sh.nodes.erase(node);
  const auto [held1, spread1, origin1, disk1] = before(sh);
  s.held += static_cast<int>(held1) - static_cast<int>(held0);
  s.spread += static_cast<int>(spread1) - static_cast<int>(spread0);
  s.on_origin += static_cast<int>(origin1) - static_cast<int>(origin0);
  s.on_origin_disk += static_cast<int>(disk1) - static_cast<int>(disk0);
  if (s.held == 0) saves_.erase(it);
}

void RecoveryPoint::Recount(Save& s) const {
  s.held = s.spread = s.on_origin = s.on_origin_disk = 0;
  for (const Shard& sh : s.shards) {
    s.held += !sh.nodes.empty();
    s.spread += static_cast<int>(sh.nodes.size()) >= copies_;
    auto it = sh.nodes.find(sh.origin);
    s.on_origin += it != sh.nodes.end();
    s.on_origin_disk += it != sh.nodes.end() && (it->second & 2);
  }
}

void RecoveryPoint::Forget(int node) {
  for (auto it = saves_.begin(); it != saves_.end();) {
    for (Shard& sh : it->second.shards) sh.nodes.erase(node);
    Recount(it->second);
    it = it->second.held == 0 ? saves_.erase(it) : std::next(it);
  }
}

void RecoveryPoint::NewGeneration(int copies, int64_t resumed) {
  copies_ = std::max(1, copies);
  for (auto& [key, s] : saves_) Recount(s);
  securing_ = {};
  base_ = std::max<int64_t>(resumed, 0);
  newest_step_ = -1;
}

void RecoveryPoint::Resumed(int64_t resumed) {
  abandoned_.clear();
  for (auto it = saves_.begin(); it != saves_.end();) {
    if (it->first.first <= resumed) {
      ++it;
      continue;
    }
    abandoned_.push_back({it->first.first, it->first.second});
    it = saves_.erase(it);
  }
  if (point_.step > resumed) point_ = {};
}

void RecoveryPoint::NoteProgress(int64_t step) {
  newest_step_ = std::max(newest_step_, step);
  worst_ = std::max(worst_, figures().steps_at_risk);
}

bool RecoveryPoint::Secured(const Save& s) const {
  // With replicas, a writer persists each shard before it sends it, so a
  // save on enough nodes was also written to the disks (or failed loudly).
  const uint32_t world = static_cast<uint32_t>(s.shards.size());
  return s.spread == world && (copies_ > 1 || !on_disk_ || s.on_origin_disk == world);
}

void RecoveryPoint::NoteComplete(int64_t step, Save& s) {
  s.was_complete = true;
  ++complete_;
  if (last_complete_ >= 0 && step > last_complete_)
    min_gap_ = min_gap_ < 0 ? step - last_complete_ : std::min(min_gap_, step - last_complete_);
  last_complete_ = std::max(last_complete_, step);
}

void RecoveryPoint::NoteSecured(int64_t step, Save& s) {
  s.was_secured = true;
  ++secured_;
  if (first_secured_ < 0) first_secured_ = step;
  last_secured_ = std::max(last_secured_, step);
}

bool RecoveryPoint::Update() {
  for (auto& [key, s] : saves_) {  // oldest first: the gaps between saves
    const uint32_t world = static_cast<uint32_t>(s.shards.size());
    if (!s.was_complete && s.held == world) NoteComplete(key.first, s);
    if (!s.was_secured && s.spread == world) NoteSecured(key.first, s);
  }
  msg::SaveRef newest_spread;
  const Save* newest_complete = nullptr;
  msg::SaveRef newest_ref;
  for (auto it = saves_.rbegin(); it != saves_.rend(); ++it) {
    const uint32_t world = static_cast<uint32_t>(it->second.shards.size());
    if (newest_spread.step < 0 && it->second.spread == world) newest_spread = {it->first.first, it->first.second};
    if (!newest_complete && it->second.held == world) {
      newest_complete = &it->second;
      newest_ref = {it->first.first, it->first.second};
    }
  }
  // The point only moves forward: a save that lost copies with a node stays
  // protected, wherever copies of it are left, until a newer one is recoverable.
  // A restored point stands until the agents report its copies.
  const bool known = saves_.count({point_.step, point_.set}) > 0;
  if (known) restored_ = false;
  if (newest_spread.step >= point_.step || (!known && !restored_)) point_ = newest_spread;
  // Only a writer sends its shard: a save is secured while every writer holds its own.
  auto securable = [](const Save& s) { return s.on_origin == s.shards.size(); };
  if (securing_.step >= 0) {  // done, or beyond reach
    auto it = saves_.find({securing_.step, securing_.set});
    if (it == saves_.end() || !securable(it->second) || Secured(it->second)) securing_ = {};
  }
  if (securing_.step < 0 && newest_complete && securable(*newest_complete) && !Secured(*newest_complete))
    securing_ = newest_ref;

  plan_ = msg::SnapshotPlan{};
  plan_.complete = newest_complete ? newest_ref.step : -1;
  for (const msg::SaveRef& s : {point_, securing_})
    if (s.step >= 0 && std::find(plan_.protect.begin(), plan_.protect.end(), s) == plan_.protect.end())
      plan_.protect.push_back(s);
  plan_.secure = securing_;
  plan_.drop = std::exchange(abandoned_, {});
  if (sent_once_ && plan_ == sent_) return false;
  sent_ = plan_;
  sent_once_ = true;
  return true;
}

RecoveryFigures RecoveryPoint::figures() const {
  RecoveryFigures f;
  f.point = point_.step;
  if (newest_step_ >= 0) f.steps_at_risk = std::max<int64_t>(0, newest_step_ - std::max(point_.step, base_));
  f.worst_at_risk = std::max(worst_, f.steps_at_risk);
  f.complete_saves = complete_;
  f.secured_saves = secured_;
  f.asked_every = min_gap_;
  if (secured_ >= 2 && last_secured_ > first_secured_)
    f.secured_every = (last_secured_ - first_secured_) / static_cast<int64_t>(secured_ - 1);
  return f;
}

std::string RecoveryPoint::DescribeCadence() const {
  const RecoveryFigures f = figures();
  if (f.secured_saves < 2 || f.complete_saves <= f.secured_saves || f.asked_every <= 0) return "";
  const double one_in = static_cast<double>(f.complete_saves) / static_cast<double>(f.secured_saves);
  return fmt::format("snapshots every {} steps asked; {} kept up with one in {:.0f} (every {} steps)", f.asked_every,
                     copies_ > 1 ? "replicas" : "the disks", std::round(one_in), f.secured_every);
}

void RecoveryPoint::Restore(const msg::SaveRef& point, int64_t worst_at_risk) {
  point_ = point;
  restored_ = point.step >= 0;
  worst_ = worst_at_risk;
  if (point_.step >= 0) base_ = point_.step;
  Update();
}

}  // namespace ds
