// JobControl and snapshots (job_control.h). SnapshotGather
// (snapshot_gather.h) knows who holds what and gathers a step before each
// generation; JobControl passes it the agents' snapshot frames and acts on
// what it says: sends its messages, says its notices, starts the generation
// once gathered, ends the job when an agent cannot keep snapshots.
#include <fmt/format.h>

#include "launcher/coordinator/job_control.h"

namespace ds {

// With snapshots off, a well-formed snapshot frame is ignored.
Status JobControl::OnSnapshotFrame(int node, const Frame& f) {
  switch (f.type) {
    case wire::MsgType::kSnapshotReady: {
      DS_ASSIGN_OR_RETURN(msg::SnapshotReady m, msg::SnapshotReady::Decode(f.payload));
      if (!gather_) return Status::OK();
      if (m.error.empty()) SendTo(node, wire::MsgType::kSnapshotPlan, gather_->plan().Encode());
      OnGatherEvent(node, gather_->OnReady(node, m));
      return Status::OK();
    }
    case wire::MsgType::kSnapshotHeld: {
      DS_ASSIGN_OR_RETURN(msg::SnapshotHeld m, msg::SnapshotHeld::Decode(f.payload));
      if (gather_) {
        gather_->OnHeld(node, m);
        SendSnapshotPlan();
      }
      OnHeldForEviction(node, m);
      return Status::OK();
    }
    case wire::MsgType::kFetched: {
      DS_ASSIGN_OR_RETURN(msg::Fetched m, msg::Fetched::Decode(f.payload));
      if (gather_) OnGatherEvent(node, gather_->OnFetched(node, m, clock_.Now()));
      return Status::OK();
    }
    default:
      return Status::InvalidArgument(fmt::format("unexpected message type {} from an agent", static_cast<int>(f.type)));
  }
}

void JobControl::PrepareGeneration() {
  if (!gather_) return StartGeneration();
  state_ = CoordState::kGathering;
  OnGatherEvent(gen_agents_[0], gather_->Begin(generation_, gen_agents_));
}

void JobControl::OnGatherEvent(int node, const GatherEvent& e) {
  switch (e.kind) {
    case GatherEvent::Kind::kNone:
      return;
    case GatherEvent::Kind::kSetupFailed:
      return Abort(names_[node], e.what, 1);
    case GatherEvent::Kind::kRetry:
      Notice(e.what);
      return Gather();
    case GatherEvent::Kind::kReady:
      return Gather();
    case GatherEvent::Kind::kGathered:
      return StartGeneration();
  }
}

// The recovery point moved, or the save being secured: every agent hears
// what it must keep (recovery_point.h); once, the cadence they can sustain.
void JobControl::SendSnapshotPlan() {
  if (auto line = gather_->TakeCadenceNotice()) Notice(*line);
  const auto plan = gather_->TakePlan();
  if (!plan) return;
  const Bytes payload = plan->Encode();
  for (size_t i = 0; i < agents_.size(); ++i) SendTo(static_cast<int>(i), wire::MsgType::kSnapshotPlan, payload);
}

void JobControl::Gather() {
  const Gathering g = gather_->Gather(AliveAgents(), clock_.Now());
  for (const std::string& n : g.notices) Notice(n);
  const Bytes fetch = g.fetch.Encode();
  for (const Gathering::Order& o : g.orders) {
    SendTo(o.node, wire::MsgType::kReplicate, o.replicate.Encode());
    SendTo(o.node, wire::MsgType::kFetch, fetch);
  }
  SendSnapshotPlan();
}

}  // namespace ds
