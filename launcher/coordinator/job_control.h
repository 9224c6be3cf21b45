// JobControl: the job's state machine, apart from any socket. It registers
// one agent per plan node (and per standby), drives generations and decides
// restarts:
//
//   kWaitingForAgents -> [kGathering] -> kReserving -> kRunning -> kStopping -> kDone
//                             ^                                      |
//                             +------------- restart ----------------+
//
// A generation reserves MASTER_PORT on node rank 0 (its agent binds and holds
// the port until its workers start), sends Assign to every agent, and ends
// when all workers exit 0, or on the first failure (worker exit != 0, hung
// worker, lost agent, signal to dslaunch): every agent is told to Stop and
// JobControl waits until each confirms or is lost. Then it finishes, or,
// after a worker's failure, a hang or a lost agent, with elastic.max_restarts
// left and at least elastic.min_nodes agents alive, restarts: generation + 1
// on the surviving nodes, standbys stepping in for lost ones (PlanOnNodes),
// hosts in their cooldown (elastic.max_host_failures) sitting out unless
// min_nodes needs them, the store cleared. A lost node's new agent may
// register again (elastic.rejoin): it idles like a standby until a restart.
// With ranks given at join and --nnodes MIN:MAX (options.start_nodes,
// job_control_join.cc) the first generation may start on fewer nodes than
// the plan's, and a node registering later restarts the job to take part.
//
// With snapshots on (checkpoint.shared false or checkpoint.replicas > 0,
// launcher/config/checkpoint_options.h) every agent gets a SnapshotSetup when
// it registers, and each generation first gathers (kGathering): its
// SnapshotGather (snapshot_gather.h) picks the newest step complete among the
// living nodes and has every agent of the generation fetch it; the
// generation starts when all have.
//
// With elastic.in_place (dstrain workers, snapshots on;
// job_control_reshape.cc) a worker's failure or a lost node does not stop
// the generation: the survivors' agents get Reshape (the next generation,
// their workers' new ranks, the save to roll back to), a replacement rank an
// Assign; once every agent answered Reshaped and every replacement started,
// the job runs on in the new generation (state kRunning throughout). Any
// failure to confirm within elastic.in_place_deadline, or a second failure
// meanwhile, falls back to the full restart with one line saying why.
//
// Inputs are events (a registration, an agent's frame, a closed link, a
// signal) and the one DeadlineTimer it keeps armed at its next deadline;
// time comes from the injected Clock. Work per event is O(1) (a frame moves
// its agent's last time in Liveness; counters, not scans, say when all
// registered or all stopped), so that thousands of agents cost little. The
// timer wakes for the register or stop limit, or for Liveness (liveness.h):
// the Ping once per heartbeat_interval and the earliest silence deadline,
// an agent being lost when heartbeat_timeout has passed, not a sweep later.
// JobControl keeps the phases and composes the parts that have a name:
// Liveness, RestartPolicy and SnapshotGather. Agents are reached through AgentLink.
// The agents' progress summaries fill a RankProgressView; a StragglerDetector
// judges it when summaries arrive (at most once per heartbeat interval) and
// its reports are notices. A HangDetector judges it from the timer; a hung
// generation's stacks are collected from its agents before it is stopped
// (job_control_hang.cc).
// Tests drive it with fakes of all three, without sockets or sleeps.
// Not thread-safe: call from one thread (the coordinator's io thread).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/defaults.h"
#include "launcher/config/plan.h"
#include "common/check.h"
#include "launcher/coordinator/agent_link.h"
#include "launcher/coordinator/agent_slot.h"
#include "launcher/coordinator/assign_builder.h"
#include "launcher/coordinator/deadline_timer.h"
#include "launcher/coordinator/evict.h"
#include "launcher/coordinator/fleet_events.h"
#include "launcher/coordinator/hang_detector.h"
#include "launcher/coordinator/job_state.h"
#include "launcher/coordinator/kv_store.h"
#include "launcher/coordinator/liveness.h"
#include "launcher/coordinator/rank_progress.h"
#include "launcher/coordinator/slow_link.h"
#include "launcher/coordinator/reshape_round.h"
#include "launcher/coordinator/restart_policy.h"
#include "launcher/coordinator/snapshot_gather.h"
#include "launcher/coordinator/stack_collection.h"
#include "launcher/coordinator/step_watch.h"
#include "launcher/coordinator/straggler.h"
#include "launcher/report/job_record.h"
#include "wire/protocol.h"

namespace ds {

struct CoordinatorOptions {
  std::string job_id;                 // DSLAUNCH_JOB_ID
  std::string run_id;                 // DSLAUNCH_RUN_ID: this invocation's, all its generations; "" = a random one
  std::string secret;                 // the job secret (agents' HMAC key)
  std::string listen_addr = "127.0.0.1";  // numeric address to listen on
  int listen_port = 0;                // 0 = any free port
  std::string advertise_host;         // host workers/agents use to reach us ("" = listen_addr)
  std::vector<std::string> argv;      // the worker command
  double heartbeat_interval = kDefaultHeartbeatInterval;  // seconds between Pings
  double heartbeat_timeout = kDefaultHeartbeatTimeout;    // an agent silent this long is lost
  double handshake_timeout = 5.0;     // an unauthenticated connection is dropped after this
  int max_unauthenticated = 256;      // connections in the handshake at once; more wait in the backlog
  double reject_log_interval = 10.0;  // refused connections: a few logged in full, then one summary per interval
  double register_timeout = 30.0;     // every agent must register within this after Start()
  double stop_grace = kDefaultStopGrace;  // SIGTERM -> SIGKILL on the nodes
  double hang_timeout = kDefaultHangTimeout;  // 0 = off
  int master_port = 0;                // 0 = node 0's agent picks a free port
  // The per-node form: the plan's host names are placeholders (node0,
  // node1, ...), so a node is named by the host name its agent reports at
  // Register (its ranks' output prefix, the summary, notices).
  bool hosts_from_agents = false;
  // The per-node form's ranks given at join (launcher/cmd/per_node.h): a
  // Hello of role join proven with join_key gets a node rank (JoinOrder),
  // held join_lease seconds for its agent to register. "" = joins refused.
  std::string join_key;
  double join_lease = 30.0;
  int listen_fd = -1;                 // >= 0: Listen() adopts this bound, listening socket (and owns it)
  // --nnodes MIN:MAX joined: the first generation starts once start_nodes
  // agents registered and last_call seconds passed since, or all did; 0 =
  // when all did. A node that registers later (never before registered)
  // restarts the running job to take part, within elastic.max_restarts.
  int start_nodes = 0;
  double last_call = 30.0;
  double coordinator_grace = 0;       // coordinator failover: how long an agent that lost its coordinator
                                      //   looks for one (0: heartbeat_timeout); an agent away while this one
                                      //   did not lead is waited for that long once it leads again
  // What the user must see (restarts); default: a diagnostic log line.
  std::function<void(const std::string&)> notice;
};

// How often at most JobControl looks at its durable state (OnStateChange).
inline constexpr Clock::duration kStateEvery = std::chrono::milliseconds(50);

class JobControl {
 public:
  // `plan`, `record`, `store`, `clock` and `timer` must outlive it.
  JobControl(const LaunchPlan& plan, CoordinatorOptions options, JobRecord& record, KvStore& store,
             const Clock& clock, DeadlineTimer& timer);
  ~JobControl();  // closes every agent link

  // Begins the job: the register deadline and the heartbeats. `store_addr`
  // ("host:port") is what workers get as DSLAUNCH_STORE_ADDR; `fleet` (which
  // must outlive it) hears from now on of agents registered, lost, and the
  // launch tree's reports.
  void Start(const std::string& store_addr, FleetEvents& fleet);
  // An authenticated agent's Register. Error (the caller refuses the link):
  // the node is not in the plan, or it is registered and may not rejoin.
  Status OnRegister(const msg::Register& facts, std::shared_ptr<AgentLink> link);
  // A frame from a registered agent; error = protocol violation (the caller
  // closes the link, which then reports OnAgentClosed).
  Status OnAgentFrame(int node, const Frame& f);
  // The agent's link ended (closed by the peer, reset, refused).
  void OnAgentClosed(int node, const std::string& reason);
  // Tells registered agent `node` to start other nodes' agents (launch tree).
  void StartAgents(int node, const msg::StartAgents& m) { SendTo(node, wire::MsgType::kStartAgents, m.Encode()); }
  // Stops the job because of a signal to dslaunch (exit code 128+sig); a
  // second signal while stopping stops waiting for the agents.
  void RequestStop(int signal_number);
  // Ends the job with a failure that is not a worker's (e.g. an agent
  // process that died before registering); never restarts.
  void Abort(const std::string& host, const std::string& what, int exit_code);
  // Runs once when the job is over (kDone) and every agent was told to shut down.
  void OnDone(std::function<void()> cb) { on_done_ = std::move(cb); }

  CoordState state() const { return state_; }
  // The job's durable state now (job_state.h): what a coordinator taking
  // over would need to go on.
  JobState State() const;
  // Before Start(), a coordinator taking over the job takes back what it
  // remembers apart from its agents: the generation number, the restart
  // budget spent, host failure counts and cooldowns, evictions and the
  // recovery point. Membership and the running generation's assignment
  // come back as the agents register again. Error: `s` is another job's,
  // or its candidates are not this plan's.
  Status Restore(const JobState& s);
  // Before Start(), a coordinator taking over a job whose coordinator was
  // lost (coordinator failover, job_control_adopt.cc): Restore(s), and when
  // `s` was running a generation, adopts it as it runs. Its agents, having
  // kept their workers (coordinator.grace), register again and say with
  // Resume what they kept; once every node of the generation did, and every
  // other candidate that was up registered, the job runs on in that
  // generation with no worker restarted and no Assign sent. A node that does
  // not come back within register_timeout (or coordinator_grace, when
  // shorter: by then it has ended its workers), or one that kept something else,
  // fails the generation into the ordinary restart path, said in one line;
  // so does a generation that was still starting (its rendezvous went with
  // the old coordinator). Error: Restore's, or the job had ended.
  Status Adopt(const JobState& s);
  // How Adopt's takeover went, once it did ("" before, and without Adopt):
  // its one line, for `dslaunch attach` clients that come later.
  const std::string& takeover() const { return takeover_; }
  // Runs with State() after the events that changed it (the phase, a
  // generation started, a restart counted, a host cooling down, an
  // eviction, the recovery point moved, a candidate registered or lost),
  // never for one that did not (a heartbeat, progress, output): what
  // coordinator failover writes to etcd (launcher/failover/state_store.h).
  // The value costs O(candidates), so it is looked at no more often than
  // every kStateEvery: a burst of events (4,096 registrations) is one
  // value, given at most kStateEvery after the event; a new phase or
  // generation (the job's end among them) is given at once.
  void OnStateChange(std::function<void(const JobState&)> cb) { on_state_ = std::move(cb); }
  // With coordinator failover: every frame to an agent goes inside a Fenced
  // with token(), the leader's fencing token; while it says 0 (the lease
  // lost: not leading) nothing is sent at all, no registration is taken, no
  // agent's silence or closed link is judged (a closed one is, once it leads
  // again and the agent's grace passed) and the fleet is asked to start
  // nothing. `heard_by_etcd()`: when etcd last heard this leader (its last
  // answered keepalive). An agent silent since before then may be silent
  // because this leader is the one cut off, so its silence is judged only
  // once etcd has heard the leader after it began (a renewal later, ttl/3
  // at most), or, with no answer, forgiven when the lease runs out.
  void SetFencing(std::function<uint64_t()> token, std::function<Clock::time_point()> heard_by_etcd = nullptr) {
    fencing_ = std::move(token);
    heard_by_etcd_ = std::move(heard_by_etcd);
  }
  // With standby coordinators: where an agent that loses this coordinator
  // looks for the next (its own address first), told to every agent now
  // and to each that registers later (msg::Coordinators).
  void SetCoordinators(std::vector<std::string> addresses);
  int generation() const { return generation_; }
  // False while a failover leader does not lead (SetFencing's token is 0).
  bool Commanding() const { return !fencing_ || fencing_() != 0; }
  bool NodeRegistered(int node_index) const { return agents_.at(node_index).registered(); }
  // `node_index` (any value, a peer's claim) has a registered agent that is
  // connected and not lost.
  bool NodeAlive(uint32_t node_index) const {
    if (node_index >= agents_.size()) return false;
    const Agent& a = agents_[node_index];
    return a.up() && a.connected();
  }
  // The current generation's world size, and restarts so far.
  int world_size() const { return gen_plan_.world_size; }
  int restarts() const { return policy_.restarts(); }
  // Per rank, what the agents' progress summaries said this generation.
  const RankProgressView& progress() const { return progress_; }
  // For the job's views (job_view_builder.h): the candidates (plan nodes,
  // then standbys) by index, what the user calls each, and its state.
  const LaunchPlan& plan() const { return plan_; }
  const CoordinatorOptions& options() const { return opt_; }
  size_t num_candidates() const { return agents_.size(); }
  const std::string& NodeName(size_t node) const { return names_[node]; }
  bool NodeLost(size_t node) const { return agents_[node].slot == SlotState::kLost; }
  bool NodeEnded(size_t node) const { return agents_[node].slot == SlotState::kEnded; }
  // Candidates running the current generation (gen plan node -> candidate).
  const std::vector<int>& generation_nodes() const { return gen_agents_; }
  // When `node`'s agent was last heard; only meaningful once it registered.
  Clock::time_point LastHeard(size_t node) const { return liveness_.LastSeen(static_cast<int>(node)); }
  // `node`'s last heartbeat round trip in seconds; < 0: none measured yet.
  double HeartbeatRtt(size_t node) const { return liveness_.RoundTrip(static_cast<int>(node)); }
  Clock::time_point start_time() const { return start_time_; }
  // The snapshot figures (snapshot_tally.h); null with snapshots off.
  const SnapshotTally* snapshots() const { return gather_ ? &gather_->tally() : nullptr; }
  std::optional<RecoveryFigures> recovery() const {
    return gather_ ? std::optional<RecoveryFigures>(gather_->recovery()) : std::nullopt;
  }
  // The nodes (by index) reported slow (a straggler this generation, or a
  // slow link) and not recovered, in node order.
  std::vector<uint32_t> slow_nodes() const;
  // Each kind alone: slow in compute (this generation), slow links.
  std::vector<uint32_t> straggling_nodes() const { return stragglers_.Slow(); }
  std::vector<uint32_t> slow_link_nodes() const { return slow_links_.Slow(); }

 private:
  struct Agent {
    std::shared_ptr<AgentLink> link;
    uint32_t registrations = 0;  // which registration `link` is (Unjudged)
    msg::Register facts;
    SlotState slot = SlotState::kAbsent;  // agent_slot.h: its moves are in one table
    void MoveTo(SlotState to) {
      DS_CHECK_MSG(SlotMoveAllowed(slot, to),
                   (std::string("agent slot ") + SlotStateName(slot) + " -> " + SlotStateName(to)).c_str());
      slot = to;
    }
    // Busy (a stop waits for it) or idle; a lost or ended agent stays so.
    void SetBusy(bool busy) {
      if (up()) MoveTo(busy ? SlotState::kBusy : SlotState::kIdle);
    }
    bool registered() const { return slot != SlotState::kAbsent; }  // at least once
    bool up() const { return slot == SlotState::kIdle || slot == SlotState::kBusy; }
    bool connected() const { return link && !link->closed(); }
  };

  // job_control.cc: registration, agent frames, generations.
  void StartGeneration();
  void OnReserved(int node, const msg::Reserved& m);
  void SendAssigns();
  AssignContext MakeAssignContext() const;
  msg::Assign NodeAssign(size_t gen_node, const AssignContext& ctx);  // gen_plan_ node's, resume env added
  void OnWorkerStarted(const msg::WorkerStarted& m);
  void OnWorkerExited(const msg::WorkerExited& m);
  void OnProgress(int node, const msg::Progress& m);
  void SendTo(int node, wire::MsgType type, const Bytes& payload);
  void Notice(const std::string& text);
  // job_control_stop.cc: failures, stopping, the end, deadlines.
  void Fail(const std::string& host, const std::string& what, int exit_code, bool restartable);
  void StopGeneration(const std::string& why, bool restartable);
  void MaybeFinishStopping();
  void Finish();
  void OnTimer();
  Clock::time_point RegisterDeadline() const;
  void CheckRegisterDeadline(Clock::time_point now);
  void CheckLiveness(Clock::time_point now);
  void LoseAgent(int node, const std::string& reason);  // marks it lost, tells the fleet
  void CheckStopDeadline(Clock::time_point now);
  Clock::time_point StopDeadline() const;
  Clock::time_point NextDeadline() const;
  void Rearm();
  // job_control_snapshot.cc: acting on SnapshotGather.
  Status OnSnapshotFrame(int node, const Frame& f);
  void PrepareGeneration();  // gathers first when snapshots are on, then StartGeneration
  void OnGatherEvent(int node, const GatherEvent& e);
  void Gather();             // sends what gather_ decided
  void SendSnapshotPlan();   // to every agent, when the recovery point's plan changed
  // job_control_restart.cc: the next generation after RestartPolicy's yes.
  std::vector<bool> AliveAgents() const;  // by node: registered, not lost, connected
  void Restart();
  // job_control_reshape.cc: in-place recovery (elastic.in_place), one ReshapeRound at a time.
  // Instead of stopping after a failure: true when the reshape began.
  bool TryReshape(const std::string& why);
  void SendReshapes(const LaunchPlan& old_plan, const std::vector<int>& old_agents,
                    const std::map<int, int>& old_pids, const std::vector<msg::ShardSource>& sources,
                    uint32_t deadline_ms);
  void OnReshaped(int node, const msg::Reshaped& m);
  void MaybeFinishReshape();
  // The reshape under way ends without success: the line (when the job
  // restarts), the restart it counted refunded; the caller stops the generation.
  void EndReshape(const std::string& why, bool restartable);
  void CheckReshapeDeadline(Clock::time_point now);
  // job_control_adopt.cc: taking over a running generation (Adopt).
  void OnResume(int node, const msg::Resume& m);
  void MaybeAdopt();  // every awaited agent back or lost: Adopted()
  void Adopted();     // runs on in the adopted generation, or fails it into a restart
  // job_control_hang.cc: a hung generation's stacks (StackCollection), then its failure.
  void CheckHang(Clock::time_point now);
  void OnWorkerHung(int node, const msg::WorkerHung& m);  // elastic.hang_timeout: the same, naming that rank
  void CollectStacks(const std::string& why, Clock::time_point now, int culprit = -1);
  void OnStacks(int node, const msg::Stacks& m);
  void FinishStacks();
  // job_control_evict.cc: elastic.evict_slow (evict.h).
  void MarkSlowForEviction();
  void OnHeldForEviction(int node, const msg::SnapshotHeld& m);
  void Evict(const std::string& when);
  std::vector<bool> RestartCandidates() const;  // AliveAgents less the evicted in their cooldown
  // job_control_join.cc: --nnodes MIN:MAX joined (options.start_nodes).
  void CheckLastCall(Clock::time_point now);  // starts on the registered nodes once the window is over
  void StartOnRegistered();                   // the first generation on the nodes registered so far
  void Grow(int node, const char* how);       // `node` joined a started job: restart to take it in

  const LaunchPlan& plan_;            // the job's plan
  std::vector<NodePlan> candidates_;  // its nodes, then its standbys: agents_ by index
  std::vector<std::string> names_;    // by index, what the user knows each node as (hosts_from_agents)
  LaunchPlan gen_plan_;               // the current generation's plan
  std::vector<int> gen_agents_;       // gen_plan_ node i runs on agents_[gen_agents_[i]]
  CoordinatorOptions opt_;
  JobRecord& record_;
  KvStore& store_;
  const Clock& clock_;
  DeadlineTimer& timer_;
  std::string store_addr_;
  NoFleetEvents no_fleet_;
  FleetEvents* fleet_ = &no_fleet_;   // Start()'s; before it, nobody hears
  CoordState state_ = CoordState::kWaitingForAgents;
  int generation_ = 0;
  RestartPolicy policy_;              // whether and where the job restarts
  bool restart_after_stop_ = false;   // the generation is stopping because of a failure
  Clock::time_point failure_time_;    // the one the last restart followed
  int master_port_ = 0;
  std::vector<Agent> agents_;         // by node index
  size_t num_registered_ = 0;         // agents_ that registered (first time)
  size_t stop_cursor_ = 0;            // agents_ before it are stopped or gone (kStopping)
  Liveness liveness_;                 // heartbeats: Pings and silence
  RankProgressView progress_;         // the current generation's ranks, from the agents' summaries
  StragglerDetector stragglers_;      // judges progress_: slow nodes, said as notices
  SlowLinkDetector slow_links_;       // judges the heartbeat round trips: slow links, said as notices
  HangDetector hangs_;                // judges progress_ from the timer: a hung generation
  StepWatch step_watch_;              // says when hang detection has no steps to judge
  StackCollection stacks_;            // a hung generation's stacks, while they are being collected
  Evictions evictions_;               // elastic.evict_slow: slow nodes marked, evicted, cooling down
  std::set<uint32_t> evict_said_;     // nodes judged for eviction this generation
  Clock::time_point last_judged_{};   // at most one judgement per heartbeat interval
  Clock::time_point start_time_;
  Clock::time_point last_call_ = Clock::time_point::max();  // start_nodes registered: start at this time
  std::string grow_cause_;            // the restart under way takes in a joined node: its notice's cause
  Clock::time_point stop_started_;
  std::function<void()> on_done_;
  // OnStateChange: the value last given, and the guard each entry point
  // (Start, OnRegister, OnAgentFrame, OnAgentClosed, RequestStop, Abort,
  // OnTimer) holds so that the value is compared once its event is done.
  std::function<void(const JobState&)> on_state_;
  std::function<uint64_t()> fencing_;  // SetFencing's; null: bare frames
  std::function<Clock::time_point()> heard_by_etcd_;  // SetFencing's; null: silence judged at once
  struct Unjudged {  // an agent's link that closed while this coordinator did not lead
    int node;
    uint32_t registration;  // Agent::registrations then
    std::string reason;
    Clock::time_point due = Clock::time_point::max();  // set once it leads again: the agent's time to come back
  };
  std::vector<Unjudged> unjudged_;
  void JudgeUnjudged(Clock::time_point now);
  msg::Coordinators coordinators_;     // SetCoordinators'; none: not sent
  std::optional<JobState> published_;
  Clock::time_point state_looked_at_;  // PublishState's last look
  bool state_pending_ = false;         // an event since, not looked at yet (the timer's)
  struct PublishOnReturn {
    JobControl& control;
    ~PublishOnReturn() { control.PublishState(); }
  };
  void PublishState();
  CoordState Phase() const;  // the phase the durable state says (State())
  std::unique_ptr<SnapshotGather> gather_;  // null with snapshots off
  bool in_place_ = false;             // elastic.in_place, dstrain and snapshots: failures reshape
  std::optional<ReshapeRound> reshaping_;  // the in-place recovery under way
  // Adopt's generation while its agents come back.
  struct Adoption {
    int generation = 0;      // the one running when the state was written
    std::set<int> awaited;   // candidates up when the old coordinator wrote its state: all register first
    std::set<int> resumed;   // nodes of the generation whose Resume arrived
    std::string mismatch;    // why it cannot be adopted as it runs ("" = it can)
  };
  std::optional<Adoption> adopting_;
  std::string takeover_;  // takeover()
  // The running generation's workers were started under a lost coordinator
  // (Adopt): their store went with it, so a Reshape names this one's, until
  // one succeeded or a restart started every worker afresh.
  bool workers_store_lost_ = false;
};

}  // namespace ds
