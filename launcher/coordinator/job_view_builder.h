// BuildJobView: the JobView (launcher/report/job_view.h) of a running job,
// from JobControl's state, its per-rank progress, its heartbeat round trips
// and snapshot figures (snapshot_tally.h), and the job record: what
// the status line, `/metrics` and `dslaunch status` show. O(nodes + ranks)
// per call, so callers build it when asked (a scrape, a status-line tick),
// never per frame. The coordinator's io thread only (it reads JobControl).
#pragma once

#include "common/clock.h"
#include "launcher/coordinator/job_control.h"
#include "launcher/report/job_record.h"
#include "launcher/report/job_view.h"

namespace ds {

// `now` is the control's clock reading.
JobView BuildJobView(const JobControl& control, const JobRecord& record, Clock::time_point now);

// "waiting", "gathering", "reserving", "running", "stopping", "done".
const char* StateName(CoordState s);

}  // namespace ds
