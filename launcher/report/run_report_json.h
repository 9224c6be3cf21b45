// The timeline (run_report_timeline.h) in the job record's JSON: the record
// is a JobView's object (job_view_json.h) with one more key, "timeline", so
// `dslaunch status` reads it as before and `dslaunch report` reads both.
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// How the job ended, kept in its record ("ending") so that `dslaunch status
// JOB` and `dslaunch report` say it after the fact: the summary dslaunch
// printed at the end (the root cause, every failed rank, the restarts and
// their causes), the worker command and when the job started; what it was
// started from (dslaunch's command line, job file, hostfile, version) and
// where its files are (per-rank logs, the last hang's stacks, checkpoints).
// Every field is optional in a record ("" / empty / 0: not kept, or none).
struct RecordEnding {
  static constexpr size_t kMaxStacksText = 64 * 1024;  // hang_stacks kept in the record, at most

  std::string summary;            // FormatSummary's text, "" = not kept (an older dslaunch)
  std::vector<std::string> argv;  // the worker command
  int64_t started = 0;            // wall clock, seconds since the epoch; 0 = unknown
  std::vector<std::string> command_line;  // dslaunch's own, as it was started
  std::string job_file;           // as given; "" = a command, no job file
  std::string hostfile;           // as given; "" = this machine
  std::string version;            // dslaunch's
  std::string log_dir;            // the per-rank log files; "" = none
  std::string checkpoint_dir;     // the job's checkpoint directory as configured ({host} unexpanded)
  std::string stacks_path;        // the last hang's stacks file; "" = none written
  std::string hang_stacks;        // the last hang's stacks, every rank's (cut at kMaxStacksText); "" = no hang
  std::vector<std::string> hang_report;  // the last hang's report as printed (ranks grouped by stack)
};

// `record` with "ending" added; one line, "\n" ended. Error: not a JSON object.
Result<std::string> WithEnding(const std::string& record, const RecordEnding& ending);
// The record's ending; an empty one when the record has none. Error: not
// JSON, or an ending of the wrong shape, said as "<what>: ...".
Result<RecordEnding> ParseEnding(const std::string& record, const std::string& what);

}  // namespace ds
