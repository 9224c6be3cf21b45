// The timeline (run_report_timeline.h) in the job record's JSON: the record
// is a JobView's object (job_view_json.h) with one more key, "timeline", so
// `dslaunch status` reads it as before and `dslaunch report` reads both.
// Pure; thread-compatible.
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/report/run_report_timeline.h"

namespace ds {

// `record` (a JobViewJson text) with "timeline" added; one line, "\n" ended.
// Error: `record` is not a JSON object.
Result<std::string> WithTimeline(const std::string& record, const RunTimeline& timeline);
// The record's timeline; a record without one (an older dslaunch) gives an
// empty timeline. Error: not JSON, or a timeline of the wrong shape, said as
// "<what>: ..." with `what` naming the record.
Result<RunTimeline> ParseTimeline(const std::string& record, const std::string& what);

}  // namespace ds
