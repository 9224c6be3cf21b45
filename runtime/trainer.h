// Train: dstrain's training loop on one rank. Loads the data, builds the
// model, the optimizer and the ZeRO engine, resumes from the newest complete
// checkpoint (any world size or stage), then per step: micro-batches from
// the DistributedSampler, engine step with the scheduled learning rate, a
// heartbeat to the local agent, metrics and progress on rank 0, periodic
// checkpoints; test accuracy after every epoch and at the end.
//
// Errors: bad config or data -> Status; a collective failure throws CommError
// (main turns it into its exit code so dslaunch restarts the generation).
// Every rank must call Train with the same config.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/config/trainer_config.h"
#include "runtime/zero_engine.h"

namespace ds {
class StepHeartbeat;
}

namespace ds::rt {

struct TrainerRuntime {
  std::string config_text;         // hashed into checkpoint manifests
  std::string checkpoint_dir;      // resolved; empty = no checkpoints
  std::FILE* out = stdout;         // progress and results (rank 0)
  bool tty = false;                // progress bar instead of plain lines
  bool quiet = false;              // no progress output at all (tests)
  StepHeartbeat* heartbeat = nullptr;  // beats after every step when set
};

struct TrainResult {
  double test_accuracy = 0;        // after the last step (global over ranks)
  int64_t steps = 0;               // loop steps done in total (incl. resumed ones)
  int64_t resumed_from_step = -1;  // -1 = fresh start
  double samples_per_sec = 0;      // average over this run
  std::vector<double> losses;      // global mean training loss of each steps_per_print window
  std::vector<double> epoch_accuracy;
  MemoryReport memory;
};

Result<TrainResult> Train(const TrainerConfig& config, Communicator& comm,
                          const TrainerRuntime& runtime);

}  // namespace ds::rt
