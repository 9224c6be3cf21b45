// ProcessLauncher: the real WorkerLauncher (agent_seams.h). Each worker is a
// WorkerProcess (own process group, /dev/null stdin, PR_SET_PDEATHSIG),
// exec'd with an environment built here: the agent's own (less
// DSLAUNCH_SECRET_FD and, for a step agent, the step launcher's task
// variables), the Assign's, the agent's heartbeat token and snapshot
// directory, a private TORCHELASTIC_ERROR_FILE, NCCL/GLOO_SOCKET_IFNAME (the
// interface that routes to MASTER_ADDR, unless set) and, with
// bind_cores_to_rank, the rank's cores. It holds MASTER_PORT for node rank
// 0 between Reserve and the workers' start; then, unless the job set
// DSLAUNCH_STORE_RELAY=0 or gave the port (--master_port: torchrun's
// contract, every rank sees it), a StoreRelay (store_relay.h) keeps it
// listening until Stop, the next Reserve or the end, and rank 0 gets a
// second free port as its MASTER_PORT, where its own store listens (on any
// address or on MASTER_ADDR: the relay tries both). Every worker's
// PYTHONPATH ends with the dslaunch Python package (python_path.h). For the event loop
// (AgentSession) it gives the workers' pipes to poll and turns a reaped pid
// into a WorkerExit. With the Assign's preload list it keeps a warm spare
// per local rank for the next generation (warm_spares.h): a worker it can
// hand its assignment to instead of forking. A worker whose Assign names
// DSLAUNCH_CONTROL_FD (in-place recovery), without warm spares, gets a
// control channel (control_channel.h) there, and keeps it, its pid and
// pipes across a Renumber. Not thread-safe: the agent's event loop only.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/control/seams.h"
#include "agent/tree/child_agents.h"
#include "agent/workers/error_file_dir.h"
#include "agent/relay/store_relay.h"
#include "agent/warm/spares.h"
#include "agent/workers/worker_process.h"

namespace ds {

class ProcessLauncher final : public WorkerLauncher {
 public:
  using LineSink = std::function<void(int rank, int stream, const std::string& line)>;

  // `host` names this node in errors; `step_agent`: started by srun/mpirun
  // (IsStepTaskVariable). `tree` (its commands are spared by
  // KillLeftovers) must outlive the launcher.
  ProcessLauncher(std::string host, bool step_agent, const ChildAgents& tree);
  ~ProcessLauncher() override;  // SIGKILLs every group still running

  Result<uint32_t> HoldPort(uint32_t port) override;
  // Also ends the relay: every socket it holds closed.
  void ReleasePort() override;
  std::vector<WorkerStart> StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                        const std::string& snapshot_dir) override;
  std::vector<WorkerStart> AddWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                      const std::string& snapshot_dir) override;
  void SignalGroup(int rank, int sig) override;
  int KillLeftovers() override;
  void Renumber(const std::vector<msg::RankMove>& moves) override;
  Status SendControl(int rank, const msg::WorkerReshape& m) override;

  using ControlSink = std::function<void(int rank, const Frame& f)>;

  // The running workers' stdout/stderr pipes.
  void AddPollFds(std::vector<pollfd>* fds) const;
  // Their control channels (polled even while output waits: back-pressure
  // must not hold up a reshape's answers).
  void AddControlFds(std::vector<pollfd>* fds) const;
  // Reads the frames waiting on `fd` if it is a worker's control channel,
  // each to `sink`; one that ended or sent garbage is closed (logged).
  // false when `fd` is not one.
  bool OnControlReadable(int fd, const ControlSink& sink);
  // Reads `fd` (bounded: kPipeReadPerWake) if it is a worker's pipe, its
  // whole lines to `sink`; false when it is not one.
  bool OnReadable(int fd, const LineSink& sink);
  // `pid`, exited and not yet waited for: if it is a worker, SIGKILLs what
  // it left in its group (while the leader is an unreaped zombie its pid
  // cannot be reused, so this hits nobody else).
  void BeforeReap(pid_t pid);
  // `pid` was reaped with wait status `status`: if it is a worker, drains
  // its pipes into `sink`, reads and removes its error file and returns how
  // it ended; nullopt otherwise.
  std::optional<WorkerExit> OnReaped(pid_t pid, int status, const LineSink& sink);

 private:
  struct Worker {
    int rank = 0;
    std::unique_ptr<WorkerProcess> proc;
    std::string error_file;  // TORCHELASTIC_ERROR_FILE; "" = none
  };
  // Turns the held MASTER_PORT into the relay; rank 0's own store port, or
  // 0 when there is no relay (nothing held, no rank 0 here, opted out, or
  // it could not start: logged, and the port is released as without it).
  int StartRelay(const msg::Assign& m);
  // Starts every worker of `m` next to workers_ (StartWorkers/AddWorkers);
  // `spares`: a warm spare may become one, and the spares are refilled.
  std::vector<WorkerStart> Spawn(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                 const std::string& snapshot_dir, bool spares);
  // The cores of each local rank (bind_cores_to_rank), or why they cannot be chosen.
  Result<std::vector<std::vector<int>>> PlanCores(const msg::Assign& m) const;
  // What worker `i` of `m` runs: argv, environment, working directory, cores.
  WorkerLaunch BuildLaunch(const msg::Assign& m, size_t i, const Worker& w, const std::vector<int>& cpus,
                           const std::string& token, const std::string& snapshot_dir, const std::string& ifname) const;
  KeyValues Environment(const msg::WorkerSpec& spec, const Worker& w, const std::string& token,
                        const std::string& snapshot_dir, const std::string& ifname, int omp_threads) const;

  std::string host_;
  bool step_agent_ = false;
  const ChildAgents& tree_;
  ErrorFileDir error_files_;  // removed with the launcher
  UniqueFd held_port_;
  bool port_given_ = false;  // the Reserve named MASTER_PORT (--master_port): no relay, every rank sees it
  std::unique_ptr<StoreRelay> relay_;  // on MASTER_PORT for the current generation
  int store_port_ = 0;                  // rank 0's MASTER_PORT behind the relay; 0 = none
  std::vector<Worker> workers_;  // the current generation's
  WarmSpares spares_;            // the next generation's interpreters (python: preload); gone with the launcher
};

}  // namespace ds
