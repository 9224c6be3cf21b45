// AgentControl: the agent's logic apart from any socket, process or real
// time, the counterpart of the coordinator's JobControl. It obeys the
// coordinator's frames (Reserve, Assign, Stop, Shutdown, the snapshot and
// launch tree messages, DumpStacks: its running workers to the StackDumps
// seam, the answer up as Stacks), relays its workers' output and ends, watches their
// step heartbeats (a worker silent past the Assign's hang timeout is killed),
// Pings the coordinator every heartbeat_interval (with a summary of the
// ranks that stepped since the last, msg::Progress) and leaves when it is silent
// past heartbeat_timeout, and stops every worker before it goes (SIGTERM,
// SIGKILL after the stop grace; a second termination signal SIGKILLs at once).
// With coordinator.grace (coordinator failover) a lost coordinator does not
// end an idle or running agent: it goes adrift (agent_control_adrift.cc),
// its workers running on, tries to reach a new leader every
// kReconnectEvery, holds what it would have sent, and on its way back
// sends Resume (the generation it kept) and then what it held; only when
// the grace runs out does it leave as before.
// Its life is one AgentPhase (agent_phase.h); every change goes through
// Enter(), which refuses a move the phase table does not hold.
//
// Inputs are events (a frame, the link lost, a worker's line, beat or end, a
// child agent's end, the snapshot keeper's news, a termination signal) and
// OnTick() whenever NextDeadline() has passed; time comes from the injected
// Clock. Outputs go through the seams (agent_seams.h). AgentSession feeds it
// from real sockets and processes, dssim from simulated ones, the unit tests
// from fakes and a FakeClock. Not thread-safe: one thread calls everything.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/control/phase.h"
#include "agent/control/worker_slot.h"
#include "agent/control/seams.h"
#include "agent/control/progress_throttle.h"
#include "agent/control/rank_summary.h"
#include "common/clock.h"
#include "common/defaults.h"
#include "wire/fencing_token.h"
#include "wire/frame_io.h"
#include "wire/step_heartbeat.h"

namespace ds {

struct AgentControlOptions {
  std::string host;                                       // this node's name on stderr
  double heartbeat_interval = kDefaultHeartbeatInterval;  // seconds between Pings to the coordinator
  double heartbeat_timeout = kDefaultHeartbeatTimeout;    // the coordinator silent this long = lost
  double coordinator_grace = 0;  // > 0: a lost coordinator's workers run on this long, waiting for a new leader
};

class AgentControl {
 public:
  using TimePoint = Clock::time_point;

  // Starts in kIdle, registered: the heartbeat timers run from now.
  // `seams` and `clock` must outlive it.
  AgentControl(AgentControlOptions options, AgentSeams seams, const Clock& clock);

  // A frame from the coordinator. One it cannot decode, or of a type the
  // agent never gets, loses the coordinator (the link is closed).
  void OnFrame(const Frame& f);
  // The link broke (closed, reset, a write failed, a bad frame header).
  void OnLinkLost(const std::string& reason);
  // A line the current generation's `rank` wrote (stream 1 stdout, 2 stderr),
  // or with msg::kOutputProgress an update of its line in progress: sent at
  // most once per kProgressInterval per stream, the newest when due.
  void OnWorkerLine(int rank, int stream, const std::string& line);
  // A step heartbeat claiming `beat.rank`: counts only with that worker's
  // token; it feeds the hang check and the rank's progress summary, sent
  // with the next Ping (msg::Progress, rank_summary.h).
  void OnStepBeat(const StepBeat& beat);
  // The workers' stacks the StackDumps seam took (after a DumpStacks): to the coordinator.
  void OnStacksTaken(const msg::Stacks& m);
  // A worker of the current generation ended.
  void OnWorkerExited(const WorkerExit& e);
  // A frame from `rank`'s worker over its control channel (WorkerReshaped).
  void OnWorkerControl(int rank, const Frame& f);
  // A launch tree command this agent started ended.
  void OnChildEnded(const msg::AgentEnded& e);
  // The snapshot keeper has messages or a failure (its events fd).
  void OnSnapshotEvents();
  // SIGTERM/SIGINT/SIGHUP: quit with 128+sig; a second one SIGKILLs the workers.
  void OnTerminationSignal(int sig);
  // Acts on every deadline that has passed (see NextDeadline).
  void OnTick();

  // When OnTick next has something to do: the next Ping, the coordinator's
  // silence limit, the pending SIGKILL, a reshape's deadline, the earliest worker hang, a kept
  // progress update, the end of kLingering. nullopt when only events can change anything.
  std::optional<TimePoint> NextDeadline() const;
  AgentPhase phase() const { return phase_; }
  bool finished() const { return phase_ == AgentPhase::kFinished; }
  int exit_code() const { return exit_code_; }  // an AgentExit / SignalExitCode, once leaving
  uint32_t generation() const { return generation_; }

 private:
  using Duration = Clock::duration;
  struct Slot {
    int rank = 0;            // in the current generation
    int beat_rank = 0;       // in its step beats: the RANK it was started with
    pid_t pid = 0;
    WorkerSlotState state = WorkerSlotState::kStarted;  // worker_slot.h: its moves are in one table
    TimePoint last_beat;
    TimePoint hang_kill_at;  // kHangSaid: killed here if no stop came by then
    std::string beat_token;  // DSLAUNCH_HEARTBEAT_TOKEN
    bool running() const { return state != WorkerSlotState::kEnded; }
  };

  // The only way the phase changes: false (and a log line) when the table
  // refuses `to`.
  bool Enter(AgentPhase to);
  // The only way a worker's state changes: false (and a log line) when the
  // table refuses `to`.
  static bool Move(Slot& s, WorkerSlotState to);
  // To the coordinator; while adrift, held for the new leader (Hold).
  void Send(wire::MsgType type, const Bytes& payload);
  void Dispatch(const Frame& f);  // one admitted frame of the coordinator's
  void OnReserve(const msg::Reserve& m);
  void OnAssign(const msg::Assign& m);
  void OnStop(const msg::Stop& m);
  void OnShutdown(const msg::Shutdown& m);
  void OnSnapshotSetup(const msg::SnapshotSetup& m);
  void OnFetch(const msg::Fetch& m);
  // agent_reshape.cc: in-place recovery (Reshape -> gather -> WorkerReshape
  // to each worker -> their WorkerReshaped -> Reshaped).
  void OnReshape(const msg::Reshape& m);
  void OnReshapeFetched(const msg::Fetched& m);  // the gather of the pending reshape ended
  void TellWorkers();
  void Verdict(int rank, bool ok, const std::string& why);  // one worker's answer
  void MaybeFinishReshape(bool deadline_passed);
  void StartDeferredAssign();
  void OnDumpStacks(const msg::DumpStacks& m);
  void OnCoordinators(const msg::Coordinators& m);
  void SendSnapshotMessages();
  void SendLine(int rank, int stream, const std::string& line);
  void SendDueProgress(TimePoint now);
  void FailToStart(Slot s, const std::string& why);
  void BeginStop();
  void SignalRunning(int sig);
  void Lost(const std::string& reason);
  // agent_control_adrift.cc: coordinator.grace.
  bool GoAdrift(const std::string& reason);  // false: this agent cannot wait (it leaves as before)
  void Hold(wire::MsgType type, const Bytes& payload);
  void CheckAdrift(TimePoint now);            // the next reconnect try, or the grace's end
  void Resume(TimePoint now);                 // registered with a new leader: Resume, then what was held
  void Quit(int exit_code, const std::string& why);
  void CheckHangs(TimePoint now);
  void CheckCoordinator(TimePoint now);
  // After anything that can end a stop: acts when every worker has ended
  // (Stopped, the last handoffs, the end).
  void Settle();
  void Leave();  // kQuitting, all ended: kLingering or kFinished
  bool AllEnded() const;
  bool Lingers(TimePoint now) const;
  Slot* Find(int rank);

  AgentControlOptions opt_;
  AgentSeams seams_;
  const Clock& clock_;
  AgentPhase phase_ = AgentPhase::kIdle;
  int exit_code_ = 0;
  bool shut_down_ = false;  // the coordinator said Shutdown: its link closing next is expected
  FencingGuard fencing_;    // the newest leader's token seen (wire/fencing_token.h)
  uint32_t generation_ = 0;
  std::vector<Slot> slots_;
  ProgressThrottle progress_;              // the workers' progress updates, rate-limited
  RankSummaries summaries_;                // the workers' step beats, summarised for the coordinator
  std::optional<uint32_t> stop_owed_;      // a Stop's generation awaiting its Stopped
  Duration stop_grace_ = Seconds(kDefaultStopGrace);
  Duration hang_timeout_ = Seconds(kDefaultHangTimeout);
  // A worker the coordinator was told is hung is killed here after this if
  // no stop came (its stack collection takes at most 10 s).
  static constexpr Duration kHangStopGrace = std::chrono::seconds(15);
  std::optional<TimePoint> kill_at_;       // SIGKILL the remaining groups then
  std::optional<TimePoint> linger_until_;  // after Shutdown: the launch tree's agents' limit
  TimePoint last_recv_;
  TimePoint last_ping_;
  // In-place recovery (agent_reshape.cc): the Reshape being answered. Its
  // generation is generation_ from the moment it arrives (the workers'
  // lines and ends carry it and their new ranks).
  struct Reshaping {
    msg::Reshape m;
    TimePoint received;
    TimePoint deadline;
    bool gathering = true;                   // Fetched owed by the snapshot keeper
    std::vector<msg::RankVerdict> verdicts;  // by move
    std::vector<bool> answered;              // by move
    std::string error;                       // the node could not take part
  };
  std::optional<Reshaping> reshape_;
  std::optional<uint32_t> reshaped_generation_;  // the last generation reshaped in place here
  std::optional<msg::Assign> deferred_assign_;  // a replacement's, held until the gather is done
  // Adrift (coordinator.grace): since when, until when, the next reconnect
  // try, and the frames held for the new leader (output up to
  // kHeldOutputBytes; Pings, progress and hang reports are not held).
  struct Adrift {
    AgentPhase from = AgentPhase::kIdle;  // where it goes back to
    TimePoint since;
    TimePoint next_try;
    std::vector<std::pair<wire::MsgType, Bytes>> held;
    size_t output_bytes = 0;
    uint64_t lines_dropped = 0;
  };
  std::optional<Adrift> adrift_;
  // The grace's end, kept from the first loss until a new leader's frame is
  // admitted: a link that opens and closes again does not restart the grace.
  std::optional<TimePoint> grace_until_;
  std::vector<std::string> coordinators_;  // Coordinators: where a leader may be, tried in turn (none: the first one)
  size_t next_coordinator_ = 0;            // the next of them to try
  static constexpr Duration kReconnectEvery = std::chrono::milliseconds(250);
  static constexpr size_t kHeldOutputBytes = 4u << 20;
};

}  // namespace ds
