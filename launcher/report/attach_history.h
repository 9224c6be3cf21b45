// What `dslaunch attach` is told first: a few lines saying what happened
// before it came (wire_format.md "Attach", Attached.history): the job's
// phase, generation, world size and step, how long it has run, each restart
// so far and why, and, for a coordinator that took the job over, that it
// did. Pure formatting.
#pragma once

#include <string>
#include <vector>

#include "launcher/report/job_record.h"
#include "launcher/report/job_view.h"

namespace ds {

// `coordinator`: lines about this coordinator, e.g. that it took the job
// over and how that went.
std::string AttachHistory(const JobView& view, const std::vector<Failure>& restart_causes,
                          const std::vector<std::string>& coordinator);

}  // namespace ds
