// `dslaunch attach [--wait S] [JOB]`: follows a running job from any host
// of it, as the user who runs it: a few lines saying what happened before,
// then the job's output and status line live, and at the job's end its
// summary; the exit code is the job's. It finds the job by the attach files
// in this user's private directory (wire/attach_file.h: every agent of the
// job keeps one, and so does its leading dslaunch) and follows the leader
// through a failover: when the connection ends without the job's end, it
// tries every address it knows (the files' again, and those the leader
// named) until --wait seconds (default 120) passed. JOB is a job id or its
// start; without it, the only job here. Errors: bad arguments
// (InvalidArgument), no job here (NotFound), no leader within --wait
// (Unavailable). Ctrl-C ends the attach, never the job.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

Result<int> RunAttach(const std::vector<std::string>& args);

}  // namespace ds
