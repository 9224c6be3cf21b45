// AgentSession: the agent's state between the event loop (agent.cc) and the
// protocol: the coordinator connection, the held MASTER_PORT, the workers of
// the current generation and the stop/lost/shutdown logic. Lifecycle:
//   kConnecting -> kIdle <-> kRunning -> kStopping -> kIdle ... -> kQuitting -> kFinished
// On a lost coordinator or a termination signal it kills every worker group
// (SIGTERM, SIGKILL after the grace period) before finishing. Not thread-safe.
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/worker_process.h"
#include "common/client_conn.h"
#include "common/protocol.h"

namespace ds {

class AgentSession {
 public:
  AgentSession(AgentOptions options, std::string secret);
  ~AgentSession();

  // Connects, authenticates, opens the heartbeat socket and registers.
  Status Connect();
  void AddPollFds(std::vector<pollfd>* fds) const;
  int PollTimeoutMs() const;
  // Handles readiness of the fds added by AddPollFds (from index `first`).
  void HandlePollResults(const std::vector<pollfd>& fds, size_t first);
  void OnTerminationSignal(int sig);
  // Collects exited workers (waitpid WNOHANG) and reports them.
  void Reap();
  void CheckTimers();
  bool Finished() const { return finished_; }
  int ExitCode() const { return exit_code_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    int rank = 0;
    int local_rank = 0;
    std::unique_ptr<WorkerProcess> proc;
    bool reported = false;   // WorkerExited sent
    bool beaten = false;     // at least one step heartbeat
    bool hung = false;
    Clock::time_point last_beat;
  };

  void Send(wire::MsgType type, const Bytes& payload);
  void ReadCoordinator();
  void HandleFrame(const Frame& f);
  void OnReserve(const msg::Reserve& m);
  void OnAssign(const msg::Assign& m);
  void BeginStop(Clock::duration grace);
  void Lost(const std::string& reason);
  void Quit(int exit_code, const std::string& why);
  void ReadHeartbeats();
  void SendLine(const Slot& s, int stream, const std::string& line);
  bool AllExited() const;
  KeyValues WorkerEnvironment(const msg::WorkerSpec& w, const std::string& ifname) const;

  AgentOptions opt_;
  std::string secret_;
  UniqueFd conn_;
  UniqueFd heartbeat_;
  UniqueFd held_port_;
  Bytes inbuf_;
  std::vector<Slot> slots_;
  uint32_t generation_ = 0;
  bool stopping_ = false;       // Stopped owed for generation_
  bool quitting_ = false;
  bool finished_ = false;
  int exit_code_ = 0;
  Clock::duration stop_grace_ = std::chrono::seconds(1);
  Clock::duration hang_timeout_{0};
  Clock::time_point kill_at_;   // SIGKILL the remaining groups at this time
  bool kill_armed_ = false;
  Clock::time_point last_recv_;
  Clock::time_point last_ping_;
};

}  // namespace ds
