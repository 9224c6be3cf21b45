// JobControl: registration, agent frames and the generation's
// way from Reserve to Assign to the workers' exits (job_control.h). Stopping
// and deadlines are in job_control_stop.cc, restarts in job_control_restart.cc.
#include "launcher/coordinator/job_control.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/log.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {

namespace {
std::vector<std::string> HostNames(const std::vector<NodePlan>& nodes) {
  std::vector<std::string> names;
  for (const NodePlan& n : nodes) names.push_back(n.host.name);
  return names;
}
double MsSince(Clock::time_point since, Clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - since).count();
}
}  // namespace

JobControl::JobControl(const LaunchPlan& plan, CoordinatorOptions options, JobRecord& record, KvStore& store,
                       const Clock& clock, DeadlineTimer& timer)
    : plan_(plan), candidates_(Candidates(plan)), names_(HostNames(candidates_)), gen_plan_(plan),
      opt_(std::move(options)), record_(record), store_(store), clock_(clock), timer_(timer),
      policy_(plan, names_, [this](const std::string& t) { Notice(t); }),
      master_port_(opt_.master_port), agents_(candidates_.size()),
      liveness_(candidates_.size(), Seconds(opt_.heartbeat_interval), Seconds(opt_.heartbeat_timeout)),
      stragglers_({plan.job.elastic.slow_factor, plan.job.elastic.slow_window, opt_.heartbeat_interval}),
      slow_links_({plan.job.elastic.slow_link_factor, plan.job.elastic.slow_link_floor}),
      hangs_({plan.job.elastic.hang_factor, plan.job.elastic.hang_floor}),
      step_watch_({plan.job.elastic.hang_factor, plan.job.elastic.hang_floor, opt_.hang_timeout}),
      evictions_(plan.job.elastic.evict_slow, plan.job.elastic.evict_cooldown) {
  for (size_t i = 0; i < plan_.nodes.size(); ++i) gen_agents_.push_back(static_cast<int>(i));
  if (opt_.run_id.empty()) opt_.run_id = RandomHex(8);
  if (plan_.job.checkpoint.Snapshots(static_cast<int>(plan_.nodes.size())))
    gather_ = std::make_unique<SnapshotGather>(plan_, names_, opt_.secret, opt_.job_id, opt_.run_id);
  // A command's workers are reshaped when they run dslaunch.torch.elastic();
  // one that does not answer falls back at the deadline.
  in_place_ = plan_.job.elastic.in_place && gather_;
}

JobControl::~JobControl() {
  state_ = CoordState::kDone;  // a link closing now reports to a finished job
  for (Agent& a : agents_)
    if (a.link) a.link->Close("coordinator destroyed");
}

void JobControl::Start(const std::string& store_addr, FleetEvents& fleet) {
  const PublishOnReturn publish{*this};
  store_addr_ = store_addr;
  fleet_ = &fleet;
  if (plan_.job.elastic.in_place && !in_place_)
    Notice("elastic.in_place: snapshots are off (no checkpoint dir, or checkpoint.shared: true with replicas: 0), "
           "so a failure restarts every worker");
  start_time_ = clock_.Now();
  liveness_.Start(start_time_);
  Rearm();
}

Status JobControl::OnRegister(const msg::Register& facts, std::shared_ptr<AgentLink> link) {
  const PublishOnReturn publish{*this};
  if (facts.node_index >= agents_.size())
    return Status::InvalidArgument(fmt::format("node index {} is not in the plan", facts.node_index));
  const int node = static_cast<int>(facts.node_index);
  Agent& a = agents_[node];
  // A failover leader without its lease would command nobody: the agent
  // had better try the next address (a leader may lead there).
  if (!Commanding())
    return Status::Unavailable("this coordinator does not lead the job now (its etcd lease is lost)");
  // A lost node may come back (elastic.rejoin): it idles until the next restart.
  const bool rejoin = a.slot == SlotState::kLost && state_ != CoordState::kDone && plan_.job.elastic.rejoin;
  // A node joining a started --nnodes MIN:MAX job (never registered before).
  const bool late = !a.registered() && opt_.start_nodes > 0 && state_ != CoordState::kWaitingForAgents &&
                    state_ != CoordState::kDone;
  // Back to this coordinator after its link closed while this one did not
  // lead (coordinator failover): its slot is as it was; its Resume follows.
  const bool back = fencing_ && a.up() && !a.connected() && state_ != CoordState::kDone;
  if (!rejoin && !late && !back && (a.registered() || state_ != CoordState::kWaitingForAgents))
    return Status::InvalidArgument(fmt::format("node {} is already registered", node));
  if (back) {
    a.link = std::move(link);
    ++a.registrations;
    liveness_.Watch(node, clock_.Now());
    if (gather_) SendTo(node, wire::MsgType::kSnapshotSetup, gather_->Setup(node).Encode());
    if (!coordinators_.addresses.empty()) SendTo(node, wire::MsgType::kCoordinators, coordinators_.Encode());
    fleet_->OnAgentRegistered(node);
    Notice(fmt::format("{} is back: it had lost this coordinator while it did not lead", names_[node]));
    Rearm();
    return Status::OK();
  }
  a.link = std::move(link);
  ++a.registrations;
  a.facts = facts;
  if (opt_.hosts_from_agents && !facts.hostname.empty()) names_[node] = Printable(facts.hostname);
  if (!a.registered()) ++num_registered_;
  a.MoveTo(SlotState::kIdle);
  liveness_.Watch(node, clock_.Now());
  slow_links_.Forget(static_cast<uint32_t>(node));
  if (gather_) SendTo(node, wire::MsgType::kSnapshotSetup, gather_->Setup(node).Encode());
  if (!coordinators_.addresses.empty()) SendTo(node, wire::MsgType::kCoordinators, coordinators_.Encode());
  fleet_->OnAgentRegistered(node);
  if (rejoin || late) {
    if (opt_.start_nodes > 0) Grow(node, rejoin ? "rejoined" : "joined");
    else Notice(fmt::format("{} rejoined; it takes part from the next restart", names_[node]));
  } else {
    DS_LOG(Info, Coord) << "node " << node << " registered after " << MsSince(start_time_, clock_.Now()) << " ms ("
                        << Printable(facts.host) << ", " << Printable(facts.addr) << " via "
                        << Printable(facts.ifname) << ", " << facts.cpus
                        << " cpus)";
    if (adopting_) MaybeAdopt();
    else if (num_registered_ == agents_.size()) PrepareGeneration();
    else if (opt_.start_nodes > 0 && num_registered_ == static_cast<size_t>(opt_.start_nodes))
      last_call_ = clock_.Now() + Seconds(opt_.last_call);
  }
  Rearm();
  return Status::OK();
}

Status JobControl::OnAgentFrame(int node, const Frame& f) {
  const PublishOnReturn publish{*this};
  liveness_.Heard(node, clock_.Now());
  switch (f.type) {
    case wire::MsgType::kPing: {
      DS_ASSIGN_OR_RETURN(msg::Ping m, msg::Ping::Decode(f.payload));
      liveness_.Echoed(node, m.echo_micros, clock_.Now());
      if (m.echo_micros != 0) slow_links_.OnRoundTrip(static_cast<uint32_t>(node), liveness_.RoundTrip(node));
      return Status::OK();
    }
    case wire::MsgType::kReserved: {
      DS_ASSIGN_OR_RETURN(msg::Reserved m, msg::Reserved::Decode(f.payload));
      OnReserved(node, m);
      return Status::OK();
    }
    case wire::MsgType::kWorkerStarted: {
      DS_ASSIGN_OR_RETURN(msg::WorkerStarted m, msg::WorkerStarted::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) OnWorkerStarted(m);
      return Status::OK();
    }
    case wire::MsgType::kOutput: {
      DS_ASSIGN_OR_RETURN(msg::Output m, msg::Output::Decode(f.payload));
      const int stream = m.stream & ~msg::kOutputProgress;
      if (stream != m.stream) record_.OnProgress(m.rank, stream, m.line);
      else record_.OnOutput(m.rank, stream, m.line);
      return Status::OK();
    }
    case wire::MsgType::kWorkerExited: {
      DS_ASSIGN_OR_RETURN(msg::WorkerExited m, msg::WorkerExited::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) OnWorkerExited(m);
      return Status::OK();
    }
    case wire::MsgType::kStopped: {
      DS_ASSIGN_OR_RETURN(msg::Stopped m, msg::Stopped::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) agents_[node].SetBusy(false);
      MaybeFinishStopping();
      return Status::OK();
    }
    case wire::MsgType::kProgress: {
      DS_ASSIGN_OR_RETURN(msg::Progress m, msg::Progress::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) OnProgress(node, m);
      return Status::OK();
    }
    case wire::MsgType::kReshaped: {
      DS_ASSIGN_OR_RETURN(msg::Reshaped m, msg::Reshaped::Decode(f.payload));
      if (static_cast<int>(m.generation) == generation_) OnReshaped(node, m);
      return Status::OK();
    }
    case wire::MsgType::kWorkerHung: {
      DS_ASSIGN_OR_RETURN(msg::WorkerHung m, msg::WorkerHung::Decode(f.payload));
      OnWorkerHung(node, m);
      return Status::OK();
    }
    case wire::MsgType::kStacks: {
      DS_ASSIGN_OR_RETURN(msg::Stacks m, msg::Stacks::Decode(f.payload));
      OnStacks(node, m);
      return Status::OK();
    }
    case wire::MsgType::kResume: {
      DS_ASSIGN_OR_RETURN(msg::Resume m, msg::Resume::Decode(f.payload));
      OnResume(node, m);
      return Status::OK();
    }
    case wire::MsgType::kAgentEnded: {
      DS_ASSIGN_OR_RETURN(msg::AgentEnded m, msg::AgentEnded::Decode(f.payload));
      fleet_->OnAgentEnded(node, m);
      return Status::OK();
    }
    default:
      return OnSnapshotFrame(node, f);
  }
}

// A summary from `node`'s agent: into the per-rank view, microseconds to
// seconds; then, at most once per heartbeat interval, the straggler judgement.
void JobControl::OnProgress(int node, const msg::Progress& m) {
  std::vector<RankProgress> ranks;
  ranks.reserve(m.ranks.size());
  for (const msg::RankStat& s : m.ranks) {
    RankProgress r;
    r.rank = s.rank;
    r.step = s.step;
    r.step_seconds = static_cast<double>(s.step_micros) / 1e6;
    r.compute_seconds = s.compute_micros < 0 ? -1 : static_cast<double>(s.compute_micros) / 1e6;
    r.samples_per_second = s.samples_milli < 0 ? -1 : static_cast<double>(s.samples_milli) / 1e3;
    r.save_stall_seconds = s.save_stall_micros < 0 ? -1 : static_cast<double>(s.save_stall_micros) / 1e6;
    r.loss_step = s.loss_step;
    r.loss = s.loss;
    r.accuracy_step = s.accuracy_step;
    r.accuracy = s.accuracy;
    ranks.push_back(r);
  }
  const auto now = clock_.Now();
  progress_.Update(static_cast<uint32_t>(node), ranks, now);
  if (gather_)
    for (const RankProgress& r : ranks) gather_->NoteProgress(r.step);
  if (state_ != CoordState::kRunning || now - last_judged_ < Seconds(opt_.heartbeat_interval)) return;
  last_judged_ = now;
  for (const std::string& line : stragglers_.Judge(progress_, names_, now)) Notice(line);
  MarkSlowForEviction();
}

void JobControl::StartGeneration() {
  state_ = CoordState::kReserving;
  DS_LOG(Info, Coord) << "generation " << generation_ << ": reserving MASTER_PORT on "
                      << names_[gen_agents_[0]];
  SendTo(gen_agents_[0], wire::MsgType::kReserve,
         msg::Reserve{static_cast<uint32_t>(generation_), static_cast<uint32_t>(opt_.master_port)}.Encode());
}

void JobControl::OnReserved(int node, const msg::Reserved& m) {
  if (node != gen_agents_[0] || state_ != CoordState::kReserving || static_cast<int>(m.generation) != generation_)
    return;  // stale
  if (!m.error.empty()) return Abort(names_[gen_agents_[0]], "MASTER_PORT reservation failed: " + m.error, 1);
  master_port_ = static_cast<int>(m.port);
  SendAssigns();
}

AssignContext JobControl::MakeAssignContext() const {
  AssignContext ctx;
  ctx.gen.job_id = opt_.job_id;
  ctx.gen.run_id = opt_.run_id;
  ctx.gen.generation = generation_;
  ctx.gen.restart_count = policy_.restarts();
  ctx.gen.master_addr = !plan_.job.network.master_addr.empty() ? plan_.job.network.master_addr
                                                               : agents_[gen_agents_[0]].facts.addr;
  ctx.gen.master_port = master_port_;
  ctx.gen.store_addr = store_addr_;
  ctx.gen.store_token = StoreToken(opt_.secret, opt_.job_id, generation_);
  ctx.argv = opt_.argv;
  ctx.stop_grace = opt_.stop_grace;
  ctx.hang_timeout = opt_.hang_timeout;
  return ctx;
}

msg::Assign JobControl::NodeAssign(size_t gen_node, const AssignContext& ctx) {
  msg::Assign a = BuildAssign(gen_plan_, static_cast<int>(gen_node), agents_[gen_agents_[gen_node]].facts, ctx);
  if (gather_)
    for (msg::WorkerSpec& w : a.workers) {
      w.env.emplace_back("DSLAUNCH_RESUME_STEP", std::to_string(gather_->resume_step()));
      w.env.emplace_back("DSLAUNCH_RESUME_SET", gather_->resume_id().set);
    }
  // In place: the agent gives each worker a control channel there (it picks the number).
  if (in_place_)
    for (msg::WorkerSpec& w : a.workers) w.env.emplace_back("DSLAUNCH_CONTROL_FD", "3");
  return a;
}

void JobControl::SendAssigns() {
  state_ = CoordState::kRunning;
  const AssignContext ctx = MakeAssignContext();
  for (size_t i = 0; i < gen_agents_.size(); ++i) {
    const int agent = gen_agents_[i];
    msg::Assign a = NodeAssign(i, ctx);
    for (const auto& w : a.workers) record_.OnAssigned(w.rank, agent, names_[agent]);
    agents_[agent].SetBusy(!a.workers.empty());
    SendTo(agent, wire::MsgType::kAssign, a.Encode());
  }
  DS_LOG(Info, Coord) << "generation " << generation_ << ": assigned " << gen_plan_.world_size
                      << " workers, MASTER_ADDR=" << ctx.gen.master_addr << " MASTER_PORT=" << master_port_;
}

void JobControl::OnWorkerStarted(const msg::WorkerStarted& m) {
  record_.OnStarted(m.rank, m.pid);
  if (reshaping_) {  // a replacement rank: its start is part of the recovery's line
    reshaping_->Started(m.rank);
    return MaybeFinishReshape();
  }
  if (record_.num_started() != gen_plan_.world_size) return;
  const auto now = clock_.Now();
  DS_LOG(Info, Coord) << "all " << gen_plan_.world_size << " workers running after " << MsSince(start_time_, now)
                      << " ms";
  if (policy_.restarts() > 0)
    Notice(fmt::format("generation {}: all {} workers running, {:.3f} s after the failure", generation_,
                       gen_plan_.world_size, MsSince(failure_time_, now) / 1000));
}

void JobControl::OnWorkerExited(const msg::WorkerExited& m) {
  const bool failed =
      record_.OnExited(m.rank, m.pid, m.exit_code, m.signal, m.hung != 0, TorchError{m.error_message, m.error_trace});
  if (state_ != CoordState::kRunning) return;
  if (failed) {
    // "w1 rank 3 exited with code 1": the in-place fallback's line may say it.
    const auto w = record_.workers().find(m.rank);
    const std::string host = w != record_.workers().end() ? w->second.host + " " : "";
    const std::string how = m.signal != 0 ? fmt::format("was killed by signal {}", m.signal)
                            : m.hung != 0 ? "hung"
                                          : fmt::format("exited with code {}", m.exit_code);
    StopGeneration(fmt::format("{}rank {} {}", host, m.rank, how), /*restartable=*/true);
  } else if (record_.AllExitedOk()) {
    DS_LOG(Info, Coord) << "every worker exited 0";
    Finish();
  }
}

void JobControl::SendTo(int node, wire::MsgType type, const Bytes& payload) {
  if (!agents_[node].connected()) return;
  if (!fencing_) return agents_[node].link->Send(type, payload);
  const uint64_t token = fencing_();
  if (token == 0) return;  // not leading now (its lease lost): it commands nobody until it leads again
  agents_[node].link->Send(wire::MsgType::kFenced, msg::Fenced{token, static_cast<uint32_t>(type), payload}.Encode());
}

void JobControl::Notice(const std::string& text) {
  if (opt_.notice) return opt_.notice(text);
  DS_LOG(Warn, Coord) << text;
}

}  // namespace ds
