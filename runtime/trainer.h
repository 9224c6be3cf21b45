// Train: dstrain's training loop on one rank. Loads the data, builds the
// model, the optimizer and the ZeRO engine, resumes from the newest complete
// checkpoint (any world size or stage), then per step: micro-batches from
// the DistributedSampler, engine step with the scheduled learning rate, a
// heartbeat to the local agent, metrics and progress on rank 0, periodic
// checkpoints; test accuracy after every epoch and at the end.
//
// Errors: bad config or data -> Status; a collective failure throws CommError
// (main turns it into its exit code so dslaunch restarts the generation, or
// reshapes the worker in place: main then makes a new Trainer over the same
// data, on the new world's communicators, resuming from the chosen save).
// Every rank must run the same config. A Trainer is used by one thread and
// runs once; it borrows the config, the communicator and the runtime
// settings, which must outlive it; it shares the data.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/snapshot_writer.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/timed_communicator.h"
#include "runtime/config/trainer_config.h"
#include "runtime/engine/engine.h"
#include "runtime/metrics.h"
#include "runtime/model/data.h"
#include "runtime/model/model.h"
#include "runtime/model/optimizer.h"
#include "runtime/numeric/rng.h"
#include "runtime/progress.h"
#include "runtime/train_data.h"
#include "runtime/engine/zero_engine.h"
#include "wire/step_heartbeat.h"

namespace ds {
}

namespace ds::rt {

struct TrainerRuntime {
  std::string run_id;              // DSLAUNCH_RUN_ID, recorded in manifests ("" outside dslaunch)
  std::string checkpoint_dir;      // resolved; empty = no checkpoints
  std::string snapshot_dir;        // DSLAUNCH_SNAPSHOT_DIR: hand shards to the agent instead
  // With snapshot_dir and more than one rank: a communicator of every rank
  // for the snapshot helper thread alone (SnapshotWriter); must outlive the run.
  Communicator* snapshot_comm = nullptr;
  int64_t resume_step = -1;        // DSLAUNCH_RESUME_STEP: the snapshot step to load; -1 = fresh
  std::string resume_set;          // DSLAUNCH_RESUME_SET: which save of it
  std::FILE* out = stdout;         // progress and results (rank 0)
  bool tty = false;                // progress bar instead of plain lines
  bool quiet = false;              // no progress output at all (tests)
  StepHeartbeat* heartbeat = nullptr;  // beats after every step when set
  // Makes the engine: the device path (main.cc, CUDA builds); empty: the CPU
  // ZeroEngine over the trainer's communicator. `device` names where it
  // computes, for the banner.
  std::function<std::unique_ptr<Engine>(const Mlp&, const Optimizer&, const ZeroOptions&)> make_engine;
  std::string device = "cpu";
  // In-place reshapes (runtime/reshape/control_channel.h). When `interrupt` becomes
  // true the next step throws CommError instead (a world of one has no
  // collective the control thread could abort).
  const std::atomic<bool>* interrupt = nullptr;
  std::function<void()> on_resumed;              // once every rank agreed on the resume, before the first step
  std::function<void(int64_t)> on_first_step;    // after this run's first step, with its number
};

// Steps of a run left out of TrainResult's steady-state time.
inline constexpr int64_t kSteadyWarmupSteps = 10;

struct TrainResult {
  double test_accuracy = 0;        // after the last step (global over ranks)
  int64_t steps = 0;               // loop steps done in total (incl. resumed ones)
  int64_t resumed_from_step = -1;  // -1 = fresh start
  double samples_per_sec = 0;      // average over this run
  int64_t saves = 0;               // checkpoints (or snapshot handoffs) written by this run
  double save_seconds = 0;         // time training stood still for them
  std::vector<double> save_ms;     // that time per save
  double samples_per_sec_with_saves = 0;  // samples_per_sec counting that time too
  // The steady state: the steps of this run after its first
  // kSteadyWarmupSteps (start-up, data upload, cuBLAS's first calls, the
  // pool's first allocations), each timed as samples_per_sec's are, in one
  // process (bench/gpu/gpu_bench). steady_steps = 0: the run was not longer.
  int64_t steady_steps = 0;
  double steady_seconds = 0;
  std::vector<double> losses;      // global mean training loss of each steps_per_print window
  std::vector<double> epoch_accuracy;
  MemoryReport memory;
};

class Trainer {
 public:
  // Loads the data and builds the model, the optimizer and the engine (with
  // fresh parameters). Error: the data cannot be read or does not fit the model.
  static Result<std::unique_ptr<Trainer>> Create(const TrainerConfig& config, Communicator& comm,
                                                 const TrainerRuntime& runtime);
  // The same over data already loaded (LoadTrainTestData of config.data).
  // Error: it does not fit the model.
  static Result<std::unique_ptr<Trainer>> Create(const TrainerConfig& config, Communicator& comm,
                                                 const TrainerRuntime& runtime,
                                                 std::shared_ptr<const TrainTestData> data);

  // Resumes from the newest checkpoint, trains to total_steps and evaluates.
  // Error: bad batch size, metrics or checkpoint I/O; CommError is thrown.
  Result<TrainResult> Run();

 private:
  Trainer(const TrainerConfig& config, Communicator& comm, const TrainerRuntime& runtime,
          std::shared_ptr<const TrainTestData> data);
  Status Resume();                                 // checkpoint_resume.h; every rank the same or none
  std::string ConfigHash() const;                  // ModelConfigHash of this model and optimizer
  Status PlanSteps();                              // steps per epoch and in total
  Status OpenMetrics();                            // rank 0, when metrics.dir is set
  void PrintBanner() const;
  Status TrainEpochs();                            // the loop over epochs and steps
  void TrainStep(const std::vector<int64_t>& indices, int64_t k);
  void AccumulateGradients(const std::vector<int64_t>& indices, int64_t k);
  void Report(const StepResult& step, double lr, double step_seconds, const StepCost& cost);
  void EvaluateEpoch(bool epoch_finished);
  Status Save(int64_t at_epoch, int64_t at_position);
  Status CompleteSnapshot();                       // at the end: the last snapshot handed over
  Status Finish();

  const TrainerConfig& config_;
  const DsConfig& ds_;
  TimedCommunicator timed_;                 // every collective of this trainer, timed (the step's compute time)
  Communicator& comm_;                      // timed_
  const TrainerRuntime& runtime_;
  const bool talk_;                         // rank 0 prints progress
  std::shared_ptr<const TrainTestData> data_;
  Mlp model_;
  std::unique_ptr<Optimizer> optimizer_;
  ZeroOptions zero_;
  std::unique_ptr<Engine> engine_;
  Rng rng_;
  DistributedSampler sampler_;
  std::unique_ptr<MetricsWriter> metrics_;  // rank 0 with metrics.dir only
  std::unique_ptr<Progress> progress_;
  TrainResult result_;

  // Batch geometry (from the ds_config) and the plan.
  const int micro_, gas_;
  const int per_step_;                      // samples per rank per step
  const int64_t global_batch_;
  const int64_t print_every_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0;

  // Where training stands (checkpointed).
  int64_t step_ = 0, epoch_ = 0, position_ = 0;

  // This run's bookkeeping.
  double loss_ = 0;            // global mean loss of the last window
  double train_seconds_ = 0;   // in training steps only (no evaluation, no checkpoints)
  int64_t samples_here_ = 0;
  int64_t steps_here_ = 0;     // steps of this run (not resumed ones), for the steady state
  int64_t last_saved_ = -1;
  double unsaid_save_stall_ = -1;  // the last save's stall, for the next step beat; <0: said already
  LocalCommunicator alone_;                 // the snapshot helper's when the job is one rank
  std::unique_ptr<SnapshotWriter> snapshots_;  // with DSLAUNCH_SNAPSHOT_DIR, from the first save on
  bool evaluated_last_ = false;
};

// Trainer::Create, then Run.
Result<TrainResult> Train(const TrainerConfig& config, Communicator& comm,
                          const TrainerRuntime& runtime);

}  // namespace ds::rt
