// The job summary dslaunch prints at the end: on failure, the first failure
// across the whole job (time, host, rank, pid, exit code or signal name, its
// last lines) and the exit code; on success one line. Pure formatting.
#pragma once

#include <string>

#include "launcher/job_record.h"

namespace ds {

// "SIGKILL" for 9, "SIG42" for unknown numbers.
std::string SignalName(int sig);

// The summary text (ends with a newline). `color` adds bold/red on a TTY.
std::string FormatSummary(const JobRecord& record, int world_size, bool color);

}  // namespace ds
