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

#include "common/status.h"

namespace ds {

Result<int> RunStatus(const std::vector<std::string>& args, std::ostream& out);

}  // namespace ds
