// AgentSession: the real shell around AgentControl (agent_control.h), which
// holds all of the agent's logic. The session owns what touches the world:
// the coordinator's TCP connection (connect, handshake, Register; then
// frames in, an Outbox out: it is the CoordinatorLink), the UDP socket of
// the workers' step heartbeats, the worker processes (ProcessLauncher), the
// snapshot keeper (RealNodeSnapshots) and the launch tree's commands
// (ChildAgents), and it reaps children. RunAgent's loop (agent.cc) polls
// AddPollFds, hands readiness to HandlePollResults, signals to
// OnTerminationSignal, and sleeps until NextDeadline.
//
// The loop never blocks on a worker or on the coordinator: each wake-up
// reads at most kPipeReadPerWake bytes from each worker pipe, frames for the
// coordinator wait in an Outbox, and while that holds kOutboxHighWater bytes
// no worker pipe is read (the workers block on their full pipes instead).
// Time: AgentControl reads the injected Clock; socket I/O deadlines handed
// to wire/ helpers stay on the real steady clock, because those helpers
// wait in real time. Not thread-safe: the event loop's thread only.
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_args.h"
#include "agent/control/agent_exit.h"
#include "agent/control/agent_control.h"
#include "agent/tree/child_agents.h"
#include "agent/snapshots/real_node_snapshots.h"
#include "agent/outbox.h"
#include "agent/process_launcher.h"
#include "agent/stacks/stack_dump.h"
#include "common/clock.h"
#include "common/private_dir.h"
#include "wire/client_conn.h"
#include "wire/protocol.h"

namespace ds {

using TimePoint = std::chrono::steady_clock::time_point;

// poll()'s timeout for sleeping until `deadline` as seen at `now`: -1 (no
// deadline, wait for events only), 0 when due, else the milliseconds left
// rounded up (never wakes before the deadline, so never spins short of it).
int PollTimeoutUntil(std::optional<TimePoint> deadline, TimePoint now);

class AgentSession final : private CoordinatorLink {
 public:
  // `clock` must outlive the session.
  AgentSession(AgentOptions options, std::string secret, const Clock& clock = RealClock());
  ~AgentSession() override;

  // Connects, authenticates, opens the heartbeat socket and registers; from
  // then on the AgentControl runs. Error: nothing is running.
  Status Connect();
  void AddPollFds(std::vector<pollfd>* fds) const;
  // AgentControl::NextDeadline (nullopt before Connect).
  std::optional<TimePoint> NextDeadline() const;
  // PollTimeoutUntil(NextDeadline(), now).
  int PollTimeoutMs() const;
  // Handles readiness of the fds added by AddPollFds (from index `first`).
  void HandlePollResults(const std::vector<pollfd>& fds, size_t first);
  void OnTerminationSignal(int sig);
  // Collects exited children (waitpid WNOHANG) and reports them.
  void Reap();
  // A failed write loses the coordinator; then AgentControl::OnTick.
  void CheckTimers();
  // Writes what is still queued for the coordinator, waiting for the socket
  // until `deadline` at most (real time): called once the loop has ended.
  void FlushBeforeExit(std::chrono::steady_clock::time_point deadline);
  bool Finished() const { return control_ && control_->finished(); }
  int ExitCode() const { return control_ ? control_->exit_code() : ds::ExitCode(AgentExit::kConnectFailed); }

 private:
  // CoordinatorLink, for AgentControl.
  void Send(wire::MsgType type, const Bytes& payload) override;
  void Close() override;
  bool open() const override { return conn_.get() >= 0; }
  bool Reconnect(const std::string& address) override;  // adrift: 500 ms at most
  void KnownCoordinators(const std::vector<std::string>& addresses) override;

  // This node's attach file (wire/attach_file.h): the leader connected to
  // now, then the others known. Written at Connect and whenever either
  // changes, removed with the session; a failure is a warning (attach then
  // finds the job through another node's file, or the leader's).
  void KeepAttachFile();

  // Connects to `address`, authenticates and sends facts_ as Register by `deadline`.
  Status ConnectAndRegister(const std::string& address, Deadline deadline);

  void FlushOutbox();
  void ReadCoordinator();
  void ReadHeartbeats();
  void OnWorkerLine(int rank, int stream, const std::string& line) { control_->OnWorkerLine(rank, stream, line); }

  AgentOptions opt_;
  std::string secret_;
  const Clock& clock_;
  msg::Register facts_;  // this node's, sent again to a new leader
  std::string leader_;                     // the address connected to now (the attach file's first)
  std::vector<std::string> coordinators_;  // every other known (Coordinators)
  std::optional<PrivateDir> attach_dir_;   // where the attach file is; none = not written
  UniqueFd conn_;
  UniqueFd heartbeat_;
  Bytes inbuf_;
  Outbox outbox_;            // frames not yet written to conn_
  std::string write_error_;  // set by FlushOutbox, turned into OnLinkLost by CheckTimers
  ChildAgents children_;
  // After Connect (they need the node's facts); control_ last, gone first.
  std::unique_ptr<ProcessLauncher> workers_;
  std::unique_ptr<RealNodeSnapshots> snapshots_;
  std::unique_ptr<StackDumper> stacks_;  // the workers' stacks for a hang report
  std::unique_ptr<AgentControl> control_;
};

}  // namespace ds
