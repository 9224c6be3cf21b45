// MetricsText: a JobView in Prometheus' text exposition format (version
// 0.0.4), what `--metrics-port` serves at /metrics. Names carry the
// `dslaunch_` prefix and their unit (`_seconds`), counters end in `_total`;
// labels are the job id, node, host and rank, escaped as the format says.
// The snapshot families appear only with checkpoint snapshots on; the
// worker's own stall per save is not among them (dstrain reports it in its
// summary; it never reaches the launcher).
// Pure; thread-compatible.
#pragma once

#include <string>

#include "launcher/report/job_view.h"

namespace ds {

// The exposition: every family with its # HELP and # TYPE, then its samples.
std::string MetricsText(const JobView& view);

// A label value escaped for the exposition: backslash, double quote and
// newline as \\, \" and \n.
std::string EscapeLabel(const std::string& value);

}  // namespace ds
