// The two pictures of run_report.h as inline SVG: the per-node timeline and
// the samples/s chart. Coordinates are fixed-width numbers ("%.1f"), so the
// same record gives the same bytes. Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "launcher/report/job_view.h"
#include "launcher/report/run_report_timeline.h"

namespace ds {

// Rows by node index: `nodes` (their hosts), plus any node the timeline names.
std::string TimelineSvg(const std::vector<NodeView>& nodes, const RunTimeline& t);
// "" when the timeline has no samples.
std::string SamplesSvg(const RunTimeline& t);

}  // namespace ds
