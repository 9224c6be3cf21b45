// `dslaunch status [--json] [JOB]`: the running jobs of this user on this
// machine, found through their status sockets in the user's private
// directory (launcher/coordinator/status_server.h), each as a table per node
// and per rank; with JOB (a job id, or its start) that job, running or ended
// (from the record it left). Without JOB and nothing running: the newest
// record, with a line saying how to choose another. With --all: every job,
// running or ended, one line each (job_list.h). Prints to `out`; returns 0. Errors: bad arguments
// (InvalidArgument), no private directory, nothing found (NotFound).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/private_dir.h"
#include "common/status.h"

namespace ds {

Result<int> RunStatus(const std::vector<std::string>& args, std::ostream& out);

// How the job whose id starts with `job` ended, from the newest record of
// such a job in `dir`: its id, dslaunch's exit code and the summary it
// printed ("" when the record kept none). NotFound when none left one here.
struct JobEnding {
  std::string job_id;
  int exit_code = -1;
  std::string summary;
};
Result<JobEnding> EndedJob(const PrivateDir& dir, const std::string& job);

}  // namespace ds
