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

// The drawing's frame, shared with run_report_curves.h: the plot spans
// [kReportLeft, kReportLeft + kReportPlot] of a kReportWidth wide picture.
inline constexpr double kReportWidth = 960, kReportLeft = 170, kReportPlot = 760;
// A round step (1, 2 or 5 times a power of ten) giving at most ~8 ticks over [0, span].
double TickStep(double span);
// The time axis at `y`: ticks and "N s" labels, "time (s)" under them.
std::string TimeAxis(const RunTimeline& t, double y);
// Where the job's elapsed second `at` is drawn.
double TimeX(const RunTimeline& t, double at);

}  // namespace ds
