// Standby coordinators (the job file's coordinator: {etcd: [...],
// standbys: N}): the leading run starts `dslaunch --standby JOB
// --standby-index K` through the job's own launcher on each of the first N
// hosts, the same command line in the same working directory, the job
// secret on its stdin (SSH carries it encrypted, as it carries the agents'
// tokens). A standby binds a port of its own at once and announces it in
// etcd under <prefix><job>/standby/<K>; the leader follows those keys
// (StandbyWatch) and tells every agent where else a leader may be found
// (msg::Coordinators). When the leader is lost, the first standby to win
// the leader key takes the job over as `dslaunch --resume` does, on its
// own address; the agents, adrift, try every address in turn.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/config/job_spec.h"
#include "launcher/config/plan.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/failover/etcd_client.h"
#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// dslaunch's command line for standby `index`: this run's own arguments
// again, after --standby JOB --standby-index K --standby-cwd DIR.
std::vector<std::string> StandbyArgv(const CliOptions& cli, const std::string& job_id, int index,
                                     const std::string& cwd);

// A listening TCP socket on `addr` (numeric), a port the kernel picks, held
// from now on: a standby's, so that its address is known before it leads
// (it accepts nothing until then; CoordinatorOptions::listen_fd).
struct BoundPort {
  int fd = -1;
  int port = 0;
};
Result<BoundPort> BindStandbyPort(const std::string& addr);

// --standby's wait while the job's leader lives. A standby the leader
// started (`index` >= 0) first binds its port (into `co`'s listen_fd and
// listen_port) and announces it, so that the agents know where it will be;
// one started by hand (-1) takes the lost coordinator's address over and
// gives up when the job's takeover record goes. True: take the job over;
// false: the job ended meanwhile (said on stderr).
Result<bool> WaitAsStandby(const JobSpec& job, int index, CoordinatorOptions& co);

// A waiting standby's SIGTERM or SIGINT (the leader's launcher ending it
// at the job's end, a user's Ctrl-C) ends its wait instead of the process,
// so that it returns and its etcd member and files go with it. Installed
// once at the standby's start; a standby that leads then stops on them as
// any leading run does (its signal_set replaces these).
void CatchStandbyStop();
bool StandbyStopAsked();

// What a run needs to start its standbys (coordinator.standbys).
struct StandbyLaunch {
  const std::string& launcher;  // "local" or "ssh" start them; others say so
  const LaunchPlan& plan;
  const SshOptions& ssh;
  const CliOptions& cli;
  const std::string& job_id;
  const std::string& secret;
  // coordinator.replicas (job_replicas.h): one standby per brief, each
  // brief after the secret on its stdin; null = coordinator.standbys.
  const std::vector<std::string>* briefs = nullptr;
};

// What a standby the leader started reads on its stdin, once: one line,
// the job secret, then (coordinator.replicas) a tab and its member's brief;
// later calls return the same.
struct StandbyInput {
  std::string secret;
  std::string brief;  // "" = none
};
const StandbyInput& ReadStandbyInput();
// One standby on each of the first N hosts, through the job's own launcher,
// the job secret on its stdin. Blocks (an SSH connect may take
// connect_timeout): call it on a thread of its own; what fails goes to
// `notice`, from that thread.
std::vector<std::unique_ptr<AgentHandle>> StartStandbys(const StandbyLaunch& s,
                                                        const std::function<void(const std::string&)>& notice);

// Puts standby `index`'s address under its key; Withdraw removes it (-1: every standby's).
// One standby (a replacement member's: member_keeper.h) on `host` with
// index `index` and its brief; the spawner's error naming the host.
Result<std::unique_ptr<AgentHandle>> StartStandbyOn(const StandbyLaunch& s, const NodePlan& host, int index,
                                                    const std::string& brief);

// Until every one of `standbys` has ended, `limit` at most: they see the
// job end in etcd and go by themselves, their members and files with
// them; one ended sooner would leave those behind.
void WaitForStandbysToEnd(const std::vector<std::unique_ptr<AgentHandle>>& standbys, std::chrono::seconds limit);

Status AnnounceStandby(const JobSpec& job, const std::string& job_id, int index, const std::string& address);
void WithdrawStandby(const JobSpec& job, const std::string& job_id, int index);

// Follows the announced standbys: calls `changed` with their addresses (in
// key order) once at the start and after every change, from its own thread.
class StandbyWatch {
 public:
  static Result<std::unique_ptr<StandbyWatch>> Start(const JobSpec& job, const std::string& job_id,
                                                     std::function<void(std::vector<std::string>)> changed);
  ~StandbyWatch();  // stops within a second

 private:
  StandbyWatch() = default;
  void Loop();

  std::unique_ptr<etcd::Client> client_;
  std::string prefix_;
  std::function<void(std::vector<std::string>)> changed_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ds
