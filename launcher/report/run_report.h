// The picture of a run for `dslaunch report`: ONE self-contained HTML page
// (inline CSS and SVG, no script, nothing fetched) drawn from a job record:
// the summary (job, exit code, restarts, generation, ranks), a timeline with
// a row per node (generations as bands, lost/rejoined/slow marks) and a line
// per restart with its number (its cause listed under the picture, and as
// the mark's tooltip), the job's samples/s over time with its axis, and,
// from the record's ending, when it started, its command and how it ended.
// Every text from the record (hosts, causes, the job id) is escaped.
// Pure; thread-compatible.
#pragma once

#include <string>

#include "launcher/report/job_view.h"
#include "launcher/report/run_report_json.h"
#include "launcher/report/run_report_timeline.h"

namespace ds {

// `s` safe as HTML text and attribute value: & < > " ' escaped.
std::string HtmlEscape(const std::string& s);

// `ending` (the record's, when it kept one) adds the start, the command and
// "How it ended": the summary dslaunch printed at the end.
std::string RunReportHtml(const JobView& summary, const RunTimeline& timeline, const RecordEnding& ending = {});

}  // namespace ds
