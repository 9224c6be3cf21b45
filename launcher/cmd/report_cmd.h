// `dslaunch report [JOB] [-o FILE]`: the picture of an ended job
// (launcher/report/run_report.h) from the record it left in this user's
// private directory (<job>-<pid>.json, launcher/coordinator/status_server.h).
// JOB is matched as `dslaunch status` matches it (a job id, or its start;
// the newest such record); without JOB, the newest record. Writes one HTML
// file: FILE, or dslaunch-report-<job>-<pid>.html in the current directory
// ("-": stdout); says where on `out`. Returns 0. Errors: bad arguments
// (InvalidArgument), no private directory, no record (NotFound, naming the
// directory and JOB), a record that is not one (naming its file), a FILE
// that cannot be written (naming it).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

Result<int> RunReport(const std::vector<std::string>& args, std::ostream& out);

}  // namespace ds
