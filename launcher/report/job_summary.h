// The job summary dslaunch prints at the end: on failure, the root cause of
// the last generation (root_cause.h: time, host, rank, pid, exit code or
// signal name, how it was chosen among several failed ranks, the error it
// recorded in TORCHELASTIC_ERROR_FILE with the innermost frames of its
// traceback, its last lines), then every rank that failed on its own with
// its exit and the time it ended, how many the stop ended, and the exit code; on success one line; then one line per
// elastic restart with the failure that caused it. Pure formatting.
#pragma once

#include <string>

#include "launcher/report/job_record.h"

namespace ds {

// "SIGKILL" for 9, "SIG42" for unknown numbers.
std::string SignalName(int sig);

// One line for a failure: "host h, rank r, pid p: exited with code 3" (a
// worker) or "host h: agent lost: ..." (anything else).
std::string DescribeFailure(const Failure& f);

// The summary text (ends with a newline). `color` adds bold/red on a TTY.
std::string FormatSummary(const JobRecord& record, int world_size, bool color);

}  // namespace ds
