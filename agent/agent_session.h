// AgentSession: the agent's state between the event loop (agent.cc) and the
// protocol: the coordinator connection, the held MASTER_PORT, the workers of
// the current generation and the stop/lost/shutdown logic. Lifecycle:
//   kConnecting -> kIdle <-> kRunning -> kStopping -> kIdle ... -> kQuitting -> kFinished
// The loop never blocks on a worker or on the coordinator: each wake-up reads
// at most kPipeReadPerWake bytes from each worker pipe, frames for the
// coordinator wait in an Outbox, and while that holds kOutboxHighWater bytes
// no worker pipe is read (the workers block on their full pipes instead).
// On a lost coordinator or a termination signal it kills every worker group
// (SIGTERM, SIGKILL after the grace period) before finishing. Not thread-safe.
//
// Time: the supervision timers (next Ping, coordinator silence, SIGKILL after
// the grace, worker hang) read the injected Clock, and NextDeadline() tells
// the event loop when the earliest of them is due, so the loop sleeps until
// then or an fd event instead of waking on a fixed period. Socket I/O
// deadlines handed to common/ helpers stay on the real steady clock, because
// those helpers wait in real time.
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/child_agents.h"
#include "agent/error_file_dir.h"
#include "agent/outbox.h"
#include "agent/snapshot_keeper.h"
#include "agent/worker_process.h"
#include "common/clock.h"
#include "common/defaults.h"
#include "wire/client_conn.h"
#include "wire/protocol.h"

namespace ds {

using TimePoint = std::chrono::steady_clock::time_point;

// poll()'s timeout for sleeping until `deadline` as seen at `now`: -1 (no
// deadline, wait for events only), 0 when due, else the milliseconds left
// rounded up (never wakes before the deadline, so never spins short of it).
int PollTimeoutUntil(std::optional<TimePoint> deadline, TimePoint now);

class AgentSession {
 public:
  // `clock` must outlive the session.
  AgentSession(AgentOptions options, std::string secret, const Clock& clock = RealClock());
  ~AgentSession();

  // Connects, authenticates, opens the heartbeat socket and registers.
  Status Connect();
  void AddPollFds(std::vector<pollfd>* fds) const;
  // When CheckTimers() next has something to do: the next Ping, the
  // coordinator-silence timeout, the pending SIGKILL, the earliest worker
  // hang. nullopt when nothing is timed (only events can change anything).
  std::optional<TimePoint> NextDeadline() const;
  // PollTimeoutUntil(NextDeadline(), now).
  int PollTimeoutMs() const;
  // Handles readiness of the fds added by AddPollFds (from index `first`).
  void HandlePollResults(const std::vector<pollfd>& fds, size_t first);
  void OnTerminationSignal(int sig);
  // Writes what is still queued for the coordinator, waiting for the socket
  // until `deadline` at most (real time): called once the loop has ended.
  void FlushBeforeExit(std::chrono::steady_clock::time_point deadline);
  // Collects exited workers (waitpid WNOHANG) and reports them.
  void Reap();
  // Acts on every deadline that is due (see NextDeadline) and on "all
  // workers exited" (Stopped / finish).
  void CheckTimers();
  bool Finished() const { return finished_; }
  int ExitCode() const { return exit_code_; }

 private:
  using Duration = std::chrono::steady_clock::duration;
  struct Slot {
    int rank = 0;
    int local_rank = 0;
    std::unique_ptr<WorkerProcess> proc;
    bool reported = false;   // WorkerExited sent
    bool beaten = false;     // at least one step heartbeat
    bool hung = false;
    TimePoint last_beat;
    std::string beat_token;  // DSLAUNCH_HEARTBEAT_TOKEN: a beat counts only with this
    std::string error_file;  // TORCHELASTIC_ERROR_FILE, read when it fails; "" = none
  };

  // Queues a frame for the coordinator and writes what the socket takes now
  // (never blocks); a write error is acted on by the next CheckTimers.
  void Send(wire::MsgType type, const Bytes& payload);
  void FlushOutbox();
  void ReadCoordinator();
  void HandleFrame(const Frame& f);
  void OnReserve(const msg::Reserve& m);
  void OnAssign(const msg::Assign& m);
  void OnSnapshotSetup(const msg::SnapshotSetup& m);
  void OnStartAgents(const msg::StartAgents& m);
  // The launch tree's commands still running: spared between generations
  // (they relay their nodes' agents' output), killed when the agent ends.
  std::set<pid_t> ChildPids() const { return children_ ? children_->pids() : std::set<pid_t>{}; }
  void SendSnapshotMessages();
  // Reports a worker that never started: `why` on its stderr, then
  // WorkerExited{127, spawn_failed}.
  void FailToStart(Slot s, const std::string& why);
  // What the worker's error file says, bounded for the wire (nothing when
  // it wrote none or it cannot be trusted); removes the file either way.
  std::optional<TorchError> TakeErrorFile(const Slot& s);
  void BeginStop(Duration grace);
  void Lost(const std::string& reason);
  void Quit(int exit_code, const std::string& why);  // exit_code: an AgentExit / SignalExitCode
  void ReadHeartbeats();
  void SendLine(const Slot& s, int stream, const std::string& line);
  bool AllExited() const;
  bool WaitingForChildren() const {
    return children_ && children_->running() > 0 && clock_.Now() < children_until_;
  }
  KeyValues WorkerEnvironment(const msg::WorkerSpec& w, const std::string& ifname, const Slot& slot,
                              int omp_threads) const;

  AgentOptions opt_;
  std::string secret_;
  const Clock& clock_;
  std::string host_;         // this node's name in messages (the Register's host)
  std::string addr_;         // this node's address that routes to the coordinator
  ErrorFileDir error_files_;  // removed with the session
  UniqueFd conn_;
  UniqueFd heartbeat_;
  UniqueFd held_port_;
  std::unique_ptr<SnapshotKeeper> snapshots_;  // after SnapshotSetup (snapshots on)
  std::unique_ptr<ChildAgents> children_;     // after StartAgents (--fanout-tree)
  Bytes inbuf_;
  Outbox outbox_;            // frames not yet written to conn_
  std::string write_error_;  // set by FlushOutbox, turned into Lost() by CheckTimers
  std::vector<Slot> slots_;
  uint32_t generation_ = 0;
  bool stopping_ = false;       // Stopped owed for generation_
  bool quitting_ = false;
  bool finished_ = false;
  int exit_code_ = 0;
  Duration stop_grace_ = Seconds(kDefaultStopGrace);
  Duration hang_timeout_ = Seconds(kDefaultHangTimeout);
  TimePoint kill_at_;   // SIGKILL the remaining groups at this time
  bool kill_armed_ = false;
  TimePoint last_recv_;
  TimePoint last_ping_;
  TimePoint children_until_;  // after Shutdown: how long to wait for children_ to end
};

}  // namespace ds
