// CoordinatorProcess: the real Coordinator (launcher/coordinator) of a job of
// `nodes` simulated hosts, run in a forked child process, so that its CPU
// time and memory are its own and can be read from /proc while the fleet
// (sim_fleet.h) loads it. The child listens on 127.0.0.1, enrolls every node
// with the given agent token, runs until the job is done, and reports its
// listening port and, at the end, what its state machine concluded (and,
// leading in an etcd, what it wrote there). It dies
// with the parent (PR_SET_PDEATHSIG). Call Start before any thread exists.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace ds::sim {

struct CoordinatorSpec {
  int nodes = 1;
  int slots = 1;                  // workers per node
  bool store = true;              // the workers connect to the store (a descriptor each)
  double heartbeat_interval = 1.0;
  double heartbeat_timeout = 5.0;
  int max_restarts = 2;
  std::string job_id;
  std::string secret;             // the job secret (store tokens derive from it)
  std::string agent_token;        // every node's agent token
  bool watch = false;             // also what dslaunch's status line, /metrics and status socket cost (sim_watch.h)
  // "" = none; else an etcd endpoint (http://HOST:PORT): the coordinator
  // leads the job there and writes its state at every transition, fenced,
  // as one with coordinator failover does (launcher/cmd/job_leader.h).
  std::string etcd;
};

struct ProcessUsage {
  double cpu_seconds = 0;         // run time so far (/proc/PID/schedstat, ns precision)
  long rss_kib = 0;               // VmRSS
  long peak_rss_kib = 0;          // VmHWM
};

// What the child's JobControl concluded, written when its job was done.
struct CoordinatorEnd {
  int exit_status = -1;           // the child's (waitpid), -1 while unknown
  int job_exit_code = -1;         // JobRecord::ExitCode()
  int restarts = -1;
  int generation = -1;
  int world_size = -1;
  // With CoordinatorSpec::etcd: the states offered (one per transition), the
  // writes that landed (a burst of transitions costs one), the last state's size.
  long long states_offered = -1;
  long long etcd_writes = -1;
  long long state_bytes = -1;
};

// Descriptors each side holds: one per agent, one per worker's store
// client, and some to spare.
inline uint64_t SimDescriptors(int nodes, int slots, bool store) {
  return static_cast<uint64_t>(nodes) * (1 + (store ? slots : 0)) + 256;
}

class CoordinatorProcess {
 public:
  static Result<std::unique_ptr<CoordinatorProcess>> Start(const CoordinatorSpec& spec);
  ~CoordinatorProcess();  // kills and reaps a child still running

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  ProcessUsage Usage() const;
  // Waits for the child to exit, up to `timeout`; error on timeout.
  Result<CoordinatorEnd> Wait(std::chrono::milliseconds timeout);

 private:
  CoordinatorProcess(pid_t pid, int report_fd) : pid_(pid), report_fd_(report_fd) {}
  pid_t pid_;
  int report_fd_;   // the child's report pipe, read end
  int port_ = 0;
  bool reaped_ = false;
};

}  // namespace ds::sim
