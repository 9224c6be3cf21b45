// Which failed rank caused a generation's failure, when several failed: the
// first failure in time, where a rank's failure begins at the first line of
// a Python traceback on its stderr (written before its process ends and
// closes its connections) or else at its exit, as dslaunch saw them arrive;
// a rank whose error (its TORCHELASTIC_ERROR_FILE, else its last lines) is a
// collective's closed or reset connection is a consequence and comes after
// every other (Gloo's "Connection closed by peer" when the rank that raised
// exits first). The choice is a guess, and says so, when more than one rank
// failed for its own reason: the order then is the order of arrival at
// dslaunch, across pipes and hosts. Ranks ended by dslaunch's stop are not
// failures. Pure; reads the record only.
#pragma once

#include <vector>

#include "launcher/report/job_record.h"

namespace ds {

struct RootCauseChoice {
  Failure cause;                               // cause_note says how it was chosen
  std::vector<const WorkerRecord*> failed;     // every rank that failed on its own, cause first, then in time
  int stopped = 0;                             // ranks ended by the stop
  bool alike = false;                          // more than one failed, all the same way (exit, signal, last
                                               //   line), none a lost connection: one line says it all
};

// True for an error that a collective reports when a peer went away
// (closed/reset connection, broken pipe, an aborted NCCL communicator).
bool IsCollateralError(const WorkerRecord& w);

// The root cause among the record's workers that failed on their own.
// Requires at least one (JobRecord::RootCause checks).
RootCauseChoice ChooseRootCause(const JobRecord& record);

}  // namespace ds
