// StatusTable: the table `dslaunch status` prints for one job (its JobView,
// live or from the record): a header line, the status line, then per node
// its host, state, when it was last heard, its heartbeat round trip and,
// with snapshots on, the newest step it holds (in memory or on its disk
// only, and the bytes it holds); then per rank its step, step time and
// samples/s. Pure; thread-compatible.
#pragma once

#include <string>

#include "launcher/report/job_view.h"

namespace ds {

std::string StatusTable(const JobView& view);

// "0.8ms", "12.5ms", "1.20s"; "-" when < 0 (none measured).
std::string RoundTripText(double seconds);

// A node's snapshots: "step 400 memory 12.3 MB", "step 380 disk 12.3 MB", "-" when it holds none.
std::string SnapshotHeldText(const NodeSnapshotView& s);

// "recovery point: step 400; a node loss now would cost 37 steps (at worst so far 120)".
std::string RecoveryPointText(const JobView& v);

}  // namespace ds
