// The report's pictures of training (run_report.h) as inline SVG: the loss
// and the evaluation accuracy over steps (RunTimeline::losses, accuracies:
// what the lowest rank that said them said), and the per-rank step-time
// strip: a row per rank, a cell per sample, coloured by the rank's step time
// against that sample's median over the ranks (who lagged, and when; each
// cell's tooltip says the time and the ratio). Fixed-width numbers, so the
// same record gives the same bytes. Pure; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "launcher/report/job_view.h"
#include "launcher/report/run_report_timeline.h"

namespace ds {

// "" when the timeline has no loss point.
std::string LossSvg(const RunTimeline& t);
// "" when the timeline has no accuracy point.
std::string AccuracySvg(const RunTimeline& t);
// "" when the timeline has no strip column. `ranks` (the record's last view)
// names the hosts of the ranks it still knows.
std::string StepTimeStripSvg(const RunTimeline& t, const std::vector<RankView>& ranks);

// A rank's step time against the median of its column: 0 within 1.25x, 1
// within 1.5x, 2 within 2x, 3 beyond (the cell's class, lag0..lag3).
int LagClass(double ratio);

}  // namespace ds
