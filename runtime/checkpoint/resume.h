// Which checkpoint a starting rank resumes from, and the check that every
// rank resumed the same one (checkpoint_format.md "Run identity"):
//   - with snapshots, exactly the save the coordinator chose
//     (DSLAUNCH_RESUME_STEP, DSLAUNCH_RESUME_SET), which must be that save
//     byte for byte; one saved with another model/optimizer config is not
//     loaded: the run starts fresh and says why;
//   - from a checkpoint directory, the newest complete and valid
//     checkpoint; a directory that holds a checkpoint of another
//     model/optimizer config is refused (neither loaded from nor saved
//     beside, so none of it is ever pruned or overwritten by this run).
// Then, collectively, every rank's choice is compared: ranks that resumed
// different saves (or some fresh, some not) never train. Load is local;
// AgreeOnResume is collective (throws CommError).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "runtime/checkpoint/checkpoint.h"

namespace ds::rt {

struct ResumeRequest {
  std::string checkpoint_dir;   // shared-directory checkpoints ("" = none)
  std::string snapshot_dir;     // DSLAUNCH_SNAPSHOT_DIR ("" = snapshots off)
  int64_t resume_step = -1;     // DSLAUNCH_RESUME_STEP: -1 = start fresh
  std::string resume_set;       // DSLAUNCH_RESUME_SET: which save of that step
  std::string run_id;           // DSLAUNCH_RUN_ID (required with snapshots)
  std::string config_hash;      // this run's ModelConfigHash
  uint64_t num_params = 0;
  int state_slots = 0;
};

struct ResumeChoice {
  std::optional<LoadedCheckpoint> checkpoint;  // nullopt: start fresh
  std::string fresh_because;                   // why a checkpoint offered was not loaded ("" otherwise)
};

// The checkpoint to resume from, or a fresh start. Errors: snapshots on
// without a run id; the chosen snapshot missing, corrupt or another save;
// a checkpoint directory of another user; one that holds a checkpoint of
// another config: "checkpoint directory D holds step_00000010, saved with
// another model/optimizer config (hash X; this run's is Y): refusing to
// resume from it or to save beside it; use another checkpoint.dir, or move
// D/step_00000010 away".
Result<ResumeChoice> FindResume(const ResumeRequest& r);

// Collective: `mine` is this rank's resumed checkpoint (nullopt: fresh), or
// null when it failed to find one (it returns its own error). Error on
// every rank when they differ: "ranks resumed different checkpoints: rank 0
// step 10 (save S), rank 1 a fresh start: refusing to train on a mixture
// (is the checkpoint directory the same one on every node?)", or "rank 1
// could not load its checkpoint (its output says why)".
Status AgreeOnResume(const std::optional<LoadedCheckpoint>* mine, Communicator& comm);

}  // namespace ds::rt
