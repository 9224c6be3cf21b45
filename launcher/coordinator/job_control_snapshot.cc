// JobControl, fourth part: snapshots (job_control.h). The agents keep the
// shards; JobControl only knows who holds what (SnapshotIndex), decides the
// step each generation resumes from, and has the agents gather it.
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "launcher/coordinator/job_control.h"
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

void JobControl::SetUpSnapshots(int node) {
  const CheckpointOptions& ck = plan_.job.checkpoint;
  msg::SnapshotSetup m;
  if (!ck.dir.empty()) {
    std::filesystem::path dir = ExpandCheckpointDir(ck.dir, candidates_[node].host.name, candidates_[node].index);
    if (dir.is_relative() && !plan_.job.working_dir.empty()) dir = std::filesystem::path(plan_.job.working_dir) / dir;
    m.dir = dir.string();
  }
  m.keep = static_cast<uint32_t>(ck.keep);
  m.peer_key = PeerKey(opt_.secret, opt_.job_id);
  m.run_id = opt_.run_id;
  agents_[node].snapshot_ready = false;
  snapshot_index_.Forget(node);  // a rejoining agent reports its disk again
  SendTo(node, wire::MsgType::kSnapshotSetup, m.Encode());
}

Status JobControl::OnSnapshotFrame(int node, const Frame& f) {
  switch (f.type) {
    case wire::MsgType::kSnapshotReady: {
      DS_ASSIGN_OR_RETURN(msg::SnapshotReady m, msg::SnapshotReady::Decode(f.payload));
      if (!m.error.empty()) {
        Abort(candidates_[node].host.name, "snapshots: " + Printable(m.error), 1);
        return Status::OK();
      }
      agents_[node].snapshot_ready = true;
      agents_[node].peer_addr = m.peer_addr;
      if (state_ == CoordState::kGathering) PrepareGeneration();
      return Status::OK();
    }
    case wire::MsgType::kSnapshotHeld: {
      DS_ASSIGN_OR_RETURN(msg::SnapshotHeld m, msg::SnapshotHeld::Decode(f.payload));
      snapshot_index_.Apply(node, m);
      agents_[node].counters = m.counters;
      return Status::OK();
    }
    case wire::MsgType::kFetched: {
      DS_ASSIGN_OR_RETURN(msg::Fetched m, msg::Fetched::Decode(f.payload));
      OnFetched(node, m);
      return Status::OK();
    }
    default:
      return Status::InvalidArgument(fmt::format("unexpected message type {} from an agent", static_cast<int>(f.type)));
  }
}

void JobControl::PrepareGeneration() {
  if (!snapshots_) return StartGeneration();
  state_ = CoordState::kGathering;
  for (int a : gen_agents_)
    if (!agents_[a].snapshot_ready) return;  // OnSnapshotFrame calls again
  bad_saves_.clear();
  Gather();
}

void JobControl::Gather() {
  std::vector<bool> alive = AliveAgents();
  const RecoveryChoice choice = snapshot_index_.Decide(alive, opt_.run_id, bad_saves_);
  std::vector<std::string> hosts;
  for (const NodePlan& n : candidates_) hosts.push_back(n.host.name);
  if (choice.step >= 0 || choice.newest >= 0 || generation_ > 0) Notice(DescribeRecovery(choice, hosts));
  if (const std::string kept = DescribeKept(choice); !kept.empty() && !kept_said_) {
    Notice(kept);
    kept_said_ = true;
  }
  resume_step_ = choice.step;
  resume_id_ = choice.id;
  gather_started_ = clock_.Now();
  // Each node's replicas go to the next R nodes of this generation, in ring order.
  const int n = static_cast<int>(gen_agents_.size());
  const int replicas = std::min(plan_.job.checkpoint.Replicas(static_cast<int>(plan_.nodes.size())), n - 1);
  msg::Fetch fetch{static_cast<uint32_t>(generation_), choice.step, choice.id, {}};
  for (const ShardPick& p : choice.picks)
    fetch.sources.push_back({p.shard, static_cast<uint32_t>(p.holder), agents_[p.holder].peer_addr});
  fetching_.clear();
  for (int i = 0; i < n; ++i) {
    msg::Replicate r{static_cast<uint32_t>(generation_), {}};
    for (int k = 1; k <= replicas; ++k) {
      const int t = gen_agents_[(i + k) % n];
      r.targets.push_back({static_cast<uint32_t>(t), agents_[t].peer_addr});
    }
    SendTo(gen_agents_[i], wire::MsgType::kReplicate, r.Encode());
    SendTo(gen_agents_[i], wire::MsgType::kFetch, fetch.Encode());
    fetching_.insert(gen_agents_[i]);
  }
}

void JobControl::OnFetched(int node, const msg::Fetched& m) {
  if (state_ != CoordState::kGathering || static_cast<int>(m.generation) != generation_ || m.step != resume_step_ ||
      m.set != resume_id_.set || !fetching_.count(node))
    return;  // stale: an earlier generation's or an abandoned step's
  if (!m.error.empty()) {
    Notice(fmt::format("{} could not gather step {}: {}; trying an older step", candidates_[node].host.name, m.step,
                       Printable(m.error)));
    bad_saves_.insert({m.step, m.set});
    return Gather();
  }
  fetching_.erase(node);
  DS_LOG(Info, Coord) << candidates_[node].host.name << " gathered step " << m.step << " (" << Mb(m.bytes)
                      << " MB from peers in " << m.micros / 1000.0 << " ms)";
  if (!fetching_.empty()) return;
  DS_LOG(Info, Coord) << "generation " << generation_ << ": every node holds step " << resume_step_ << " after "
                      << std::chrono::duration<double, std::milli>(clock_.Now() - gather_started_).count() << " ms";
  StartGeneration();
}

std::string JobControl::SnapshotSummary() const {
  if (!snapshots_) return "";
  msg::SnapshotCounters t;
  for (const Agent& a : agents_) {
    t.handoffs += a.counters.handoffs;
    t.handoff_bytes += a.counters.handoff_bytes;
    t.sent_bytes += a.counters.sent_bytes;
    t.sent_micros += a.counters.sent_micros;
    t.persisted_bytes += a.counters.persisted_bytes;
    t.persist_micros += a.counters.persist_micros;
  }
  auto rate = [](uint64_t bytes, uint64_t micros) {
    return micros == 0 ? std::string("-") : fmt::format("{:.0f} MB/s", Mb(bytes) / (static_cast<double>(micros) / 1e6));
  };
  return fmt::format("snapshots: {} shards handed to the agents ({:.1f} MB); replicated {:.1f} MB ({}); "
                     "written to the nodes' disks {:.1f} MB ({})",
                     t.handoffs, Mb(t.handoff_bytes), Mb(t.sent_bytes), rate(t.sent_bytes, t.sent_micros),
                     Mb(t.persisted_bytes), rate(t.persisted_bytes, t.persist_micros));
}

}  // namespace ds
