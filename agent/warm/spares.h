// WarmSpares: the node's warm spares (warm_spare.h), one per local rank of
// the current generation, waiting to become the next generation's workers
// (the job file's python: preload; docs/usage.md "Warm spares"). ProcessLauncher asks Take for
// each worker it starts and calls Refill once the generation's workers run;
// everything not taken is killed then. Spares are killed (and reaped) when
// this object goes, with the agent: PR_SET_PDEATHSIG covers an agent that is
// itself killed. Each reason a worker starts cold is one log line. Not
// thread-safe: the agent's event loop only.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/warm/spare.h"
#include "agent/workers/worker_process.h"

namespace ds {

class WarmSpares {
 public:
  // The worker for local rank `i` from its spare when there is one that can
  // take `launch`; nullptr (and one log line, unless there was no spare to
  // take) when it must start cold. The spare is spent either way.
  std::unique_ptr<WorkerProcess> Take(size_t i, const WorkerLaunch& launch);
  // After the generation's workers started: kills the spares not taken and,
  // with `preload` set, starts one spare per entry of `launches` (nullopt:
  // that rank did not start) unless the command is not Python, memory is
  // short or a spare failed its imports before (logged once each).
  void Refill(const std::vector<std::optional<WorkerLaunch>>& launches, const std::vector<std::string>& preload);
  // Kills every spare (the job is over here).
  void Clear() { spares_.clear(); }

  // The report sockets of the spares still importing.
  void AddPollFds(std::vector<pollfd>* fds) const;
  // `fd` is a spare's report socket: reads it (a ready spare's RSS goes to
  // the log) and returns true; false otherwise.
  bool OnReadable(int fd);
  // `pid` is a spare's and was reaped with `status`: true.
  bool OnReaped(pid_t pid, int status);
  std::set<pid_t> pids() const;

 private:
  std::vector<std::unique_ptr<WarmSpare>> spares_;  // by local rank; null = none
  std::string off_;      // why spares are off for good ("" = they are not)
  bool told_nice_ = false;
};

// Whether this process may set a child's nice value back to `nice` after
// 19: CAP_SYS_NICE, or an RLIMIT_NICE that reaches it.
bool MayRaisePriorityTo(int nice);

}  // namespace ds
