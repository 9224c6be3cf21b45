// SnapshotGather (snapshot_gather.h): the agents' snapshot setup, what they
// hold, and the gather of a step before each generation.
#include "launcher/coordinator/snapshot_gather.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {

namespace {
// The key agents authenticate each other with: derived from the job secret,
// never the secret itself.
std::string PeerKey(const std::string& secret, const std::string& job_id) {
  const std::string label = job_id + "/snapshots";
  return HexEncode(HmacSha256(secret, Bytes(label.begin(), label.end())));
}
double Mb(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }
}  // namespace

SnapshotGather::SnapshotGather(const LaunchPlan& plan, const std::vector<std::string>& names,
                               const std::string& secret, const std::string& job_id, std::string run_id)
    : plan_(plan), candidates_(Candidates(plan)), names_(names), peer_key_(PeerKey(secret, job_id)), run_id_(std::move(run_id)),
      agents_(candidates_.size()), point_(run_id_, !plan.job.checkpoint.dir.empty()), tally_(candidates_.size()) {}

msg::SnapshotSetup SnapshotGather::Setup(int node) {
  const CheckpointOptions& ck = plan_.job.checkpoint;
  msg::SnapshotSetup m;
  if (!ck.dir.empty()) {
    std::filesystem::path dir = ExpandCheckpointDir(ck.dir, candidates_[node].host.name, candidates_[node].index);
    if (dir.is_relative() && !plan_.job.working_dir.empty()) dir = std::filesystem::path(plan_.job.working_dir) / dir;
    m.dir = dir.string();
  }
  m.keep = static_cast<uint32_t>(ck.keep);
  m.peer_key = peer_key_;
  m.run_id = run_id_;
  Agent& a = agents_[node];
  if (a.ready && a.in_generation && phase_ == Phase::kWaiting) ++unready_;
  a.ready = false;
  Forget(node);
  return m;
}

GatherEvent SnapshotGather::OnReady(int node, const msg::SnapshotReady& m) {
  if (!m.error.empty()) return {GatherEvent::Kind::kSetupFailed, "snapshots: " + Printable(m.error)};
  Agent& a = agents_[node];
  const bool owed = !a.ready && a.in_generation && phase_ == Phase::kWaiting;
  a.ready = true;
  a.peer_addr = m.peer_addr;
  if (owed && --unready_ == 0) return {GatherEvent::Kind::kReady, ""};
  return {};
}

void SnapshotGather::OnHeld(int node, const msg::SnapshotHeld& m) {
  index_.Apply(node, m);
  point_.Apply(node, m);
  agents_[node].counters = m.counters;
  tally_.OnHeld(node, m);
}

GatherEvent SnapshotGather::Begin(int generation, std::vector<int> agents) {
  for (int a : gen_agents_) agents_[a].in_generation = false;
  gen_agents_ = std::move(agents);
  generation_ = generation;
  bad_saves_.clear();
  fetching_.clear();
  unready_ = 0;
  for (int a : gen_agents_) {
    agents_[a].in_generation = true;
    if (!agents_[a].ready) ++unready_;
  }
  phase_ = Phase::kWaiting;
  if (unready_ > 0) return {};
  return {GatherEvent::Kind::kReady, ""};
}

Gathering SnapshotGather::Gather(const std::vector<bool>& alive, Clock::time_point now) {
  const RecoveryChoice choice = index_.Decide(alive, run_id_, bad_saves_);
  Gathering out;
  if (choice.step >= 0 || choice.newest >= 0 || generation_ > 0) out.notices.push_back(DescribeRecovery(choice, names_));
  if (const std::string kept = DescribeKept(choice); !kept.empty() && !kept_said_) {
    out.notices.push_back(kept);
    kept_said_ = true;
  }
  resume_step_ = choice.step;
  resume_id_ = choice.id;
  choice_ = choice;
  gather_started_ = now;
  phase_ = Phase::kFetching;
  out.fetch = msg::Fetch{static_cast<uint32_t>(generation_), choice.step, choice.id, {}};
  for (const ShardPick& p : choice.picks)
    out.fetch.sources.push_back({p.shard, static_cast<uint32_t>(p.holder), agents_[p.holder].peer_addr});
  // Every node's shard server may connect to every other's (a fetch of a
  // shard an older node holds, a replica): the rest are no node of the job.
  std::vector<std::string> peers;
  for (const Agent& a : agents_)
    if (a.ready && !a.peer_addr.empty()) peers.push_back(a.peer_addr);
  // Each node's replicas go to the next R nodes of this generation, in ring order.
  const int n = static_cast<int>(gen_agents_.size());
  const int replicas = std::min(plan_.job.checkpoint.Replicas(static_cast<int>(plan_.nodes.size())), n - 1);
  point_.NewGeneration(1 + replicas, choice.step);
  fetching_.clear();
  for (int i = 0; i < n; ++i) {
    Gathering::Order order{gen_agents_[i], msg::Replicate{static_cast<uint32_t>(generation_), {}, peers}};
    for (int k = 1; k <= replicas; ++k) {
      const int t = gen_agents_[(i + k) % n];
      order.replicate.targets.push_back({static_cast<uint32_t>(t), agents_[t].peer_addr});
    }
    out.orders.push_back(std::move(order));
    fetching_.insert(gen_agents_[i]);
  }
  return out;
}

GatherEvent SnapshotGather::OnFetched(int node, const msg::Fetched& m, Clock::time_point now) {
  if (phase_ != Phase::kFetching || static_cast<int>(m.generation) != generation_ || m.step != resume_step_ ||
      m.set != resume_id_.set || !fetching_.count(node))
    return {};  // stale: an earlier generation's or an abandoned save's
  const std::string& host = names_[node];
  if (!m.error.empty()) {
    bad_saves_.insert({m.step, m.set});
    return {GatherEvent::Kind::kRetry, fmt::format("{} could not gather step {}: {}; trying an older step", host,
                                                   m.step, Printable(m.error))};
  }
  fetching_.erase(node);
  DS_LOG(Info, Coord) << host << " gathered step " << m.step << " (" << Mb(m.bytes) << " MB from peers in "
                      << m.micros / 1000.0 << " ms)";
  if (!fetching_.empty()) return {};
  phase_ = Phase::kIdle;
  point_.Resumed(resume_step_);
  DS_LOG(Info, Coord) << "generation " << generation_ << ": every node holds step " << resume_step_ << " after "
                      << std::chrono::duration<double, std::milli>(now - gather_started_).count() << " ms";
  return {GatherEvent::Kind::kGathered, ""};
}

std::optional<msg::SnapshotPlan> SnapshotGather::TakePlan() {
  if (!point_.Update()) return std::nullopt;
  return point_.plan();
}

std::optional<std::string> SnapshotGather::TakeCadenceNotice() {
  // Said once, when the skipping is plain: a few saves secured, and more complete.
  const RecoveryFigures f = point_.figures();
  if (cadence_said_ || f.secured_saves < 4) return std::nullopt;
  std::string line = point_.DescribeCadence();
  if (line.empty()) return std::nullopt;
  cadence_said_ = true;
  return line;
}

std::string SnapshotGather::Summary() const {
  msg::SnapshotCounters t;
  for (const Agent& a : agents_) {
    t.handoffs += a.counters.handoffs;
    t.handoff_bytes += a.counters.handoff_bytes;
    t.sent_bytes += a.counters.sent_bytes;
    t.sent_micros += a.counters.sent_micros;
    t.persisted_bytes += a.counters.persisted_bytes;
    t.persist_micros += a.counters.persist_micros;
    t.budget_wait_micros += a.counters.budget_wait_micros;
    t.cpu_micros += a.counters.cpu_micros;
  }
  auto rate = [](uint64_t bytes, uint64_t micros) {
    return micros == 0 ? std::string("-") : fmt::format("{:.0f} MB/s", Mb(bytes) / (static_cast<double>(micros) / 1e6));
  };
  const RecoveryFigures f = point_.figures();
  std::string out = fmt::format(
      "snapshots: {} shards handed to the agents ({:.1f} MB); replicated {:.1f} MB ({}); written to the nodes' "
      "disks {:.1f} MB ({}); agents' CPU {:.2f} s",
      t.handoffs, Mb(t.handoff_bytes), Mb(t.sent_bytes), rate(t.sent_bytes, t.sent_micros), Mb(t.persisted_bytes),
      rate(t.persisted_bytes, t.persist_micros), static_cast<double>(t.cpu_micros) / 1e6);
  if (t.budget_wait_micros > 0)
    out += fmt::format(" (and {:.2f} s waiting for their CPU budget)", static_cast<double>(t.budget_wait_micros) / 1e6);
  if (f.complete_saves > 0)
    out += fmt::format("; {} of {} complete saves on enough nodes to survive a loss", f.secured_saves, f.complete_saves);
  if (f.point >= 0) out += fmt::format("; recovery point step {}", f.point);
  if (f.worst_at_risk >= 0) out += fmt::format("; at worst a loss would have cost {} steps", f.worst_at_risk);
  if (const std::string c = point_.DescribeCadence(); !c.empty()) out += "; " + c;
  return out;
}

}  // namespace ds
