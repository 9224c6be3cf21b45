// A JobView as JSON: what `dslaunch status --json` prints, what the job's
// status socket answers, and the job record a finished job leaves for
// `dslaunch status JOB` (launcher/coordinator/status_server.h). One object,
// the JobView's fields under their own names, nodes and ranks as arrays of
// objects. Pure; thread-compatible.
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/report/job_view.h"

namespace ds {

std::string JobViewJson(const JobView& view);
// Error: not JSON, or not a JobView's shape ("status: <what>").
Result<JobView> ParseJobViewJson(const std::string& text);

}  // namespace ds
