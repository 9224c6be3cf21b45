#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "common/check.h"
#include "common/log.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/resume.h"
#include "runtime/evaluation.h"
#include "runtime/model/scheduler.h"
#include "wire/step_heartbeat.h"

namespace ds::rt {
namespace {

Precision PrecisionOf(const DsConfig& ds) {
  if (ds.fp16.enabled) return Precision::kFp16;
  if (ds.bf16) return Precision::kBf16;
  return Precision::kFp32;
}

ZeroOptions ZeroOptionsOf(const DsConfig& ds) {
  ZeroOptions zo;
  zo.stage = ds.zero.stage;
  zo.precision = PrecisionOf(ds);
  zo.reduce_bucket_size = static_cast<size_t>(std::max<int64_t>(1, ds.zero.reduce_bucket_size));
  zo.overlap_comm = ds.zero.overlap_comm;
  zo.gradient_clipping = ds.gradient_clipping;
  zo.loss_scaler = ds.loss_scaler();
  zo.offload_optimizer = ds.zero.offload_optimizer == OffloadDevice::kCpu;
  return zo;
}

}  // namespace

Result<std::unique_ptr<Trainer>> Trainer::Create(const TrainerConfig& config, Communicator& comm,
                                                 const TrainerRuntime& runtime) {
  DS_ASSIGN_OR_RETURN(TrainTestData data, LoadTrainTestData(config.data));
  return Create(config, comm, runtime, std::make_shared<const TrainTestData>(std::move(data)));
}

Result<std::unique_ptr<Trainer>> Trainer::Create(const TrainerConfig& config, Communicator& comm,
                                                 const TrainerRuntime& runtime,
                                                 std::shared_ptr<const TrainTestData> data) {
  const auto& sizes = config.model.sizes;
  if (sizes.front() != data->train.features || sizes.back() != data->train.classes)
    return Status::InvalidArgument(fmt::format(
        "trainer.model.layers: input {} and output {} must match the data set's {} features "
        "and {} classes", sizes.front(), sizes.back(), data->train.features, data->train.classes));
  return std::unique_ptr<Trainer>(new Trainer(config, comm, runtime, std::move(data)));
}

Trainer::Trainer(const TrainerConfig& config, Communicator& comm, const TrainerRuntime& runtime,
                 std::shared_ptr<const TrainTestData> data)
    : config_(config),
      ds_(config.ds),
      timed_(comm),
      comm_(timed_),
      runtime_(runtime),
      talk_(comm.rank() == 0 && !runtime.quiet),
      data_(std::move(data)),
      model_(config.model),
      optimizer_(MakeOptimizer(config.ds.optimizer)),
      zero_(ZeroOptionsOf(config.ds)),
      engine_(runtime.make_engine ? runtime.make_engine(model_, *optimizer_, zero_)
                                  : std::make_unique<ZeroEngine>(model_, timed_, *optimizer_, zero_)),
      rng_(config.seed),
      sampler_({.dataset_size = data_->train.n, .rank = comm.rank(), .world_size = comm.size(),
                .seed = config.seed, .shuffle = config.data.shuffle,
                .drop_last = config.data.drop_last}),
      micro_(static_cast<int>(config.ds.batch.micro_batch)),
      gas_(static_cast<int>(config.ds.batch.gas)),
      per_step_(micro_ * gas_),
      global_batch_(config.ds.batch.train_batch_size),
      print_every_(std::max<int64_t>(1, config.ds.steps_per_print)) {
  engine_->InitParams(config.seed);
  result_.memory = engine_->Memory();
}

Result<TrainResult> Trainer::Run() {
  DS_RETURN_IF_ERROR(Resume());
  DS_RETURN_IF_ERROR(PlanSteps());
  DS_RETURN_IF_ERROR(OpenMetrics());
  progress_ = std::make_unique<Progress>(
      runtime_.out, ProgressOptions{.tty = runtime_.tty, .interval = 1, .total_steps = total_steps_,
                                    .steps_per_epoch = steps_per_epoch_, .start_step = step_});
  PrintBanner();
  if (runtime_.on_resumed) runtime_.on_resumed();
  DS_RETURN_IF_ERROR(TrainEpochs());
  DS_RETURN_IF_ERROR(Finish());
  return result_;
}

std::string Trainer::ConfigHash() const { return ModelConfigHash(config_.model, config_.ds.optimizer.type); }

Status Trainer::Resume() {
  ResumeRequest req{runtime_.checkpoint_dir, runtime_.snapshot_dir, runtime_.resume_step, runtime_.resume_set,
                    runtime_.run_id,         ConfigHash(),           model_.num_params(),  optimizer_->state_slots()};
  Result<ResumeChoice> found = FindResume(req);
  const std::optional<LoadedCheckpoint>* mine = found.ok() ? &found->checkpoint : nullptr;
  Status agreed = AgreeOnResume(mine, comm_);  // every rank, even one that failed: none trains on a mixture
  DS_RETURN_IF_ERROR(found.status());
  DS_RETURN_IF_ERROR(agreed);
  if (!found->fresh_because.empty()) {
    DS_LOG(Warn, Ckpt) << found->fresh_because;
    if (talk_) fmt::print(runtime_.out, "{}\n", found->fresh_because);
  }
  std::optional<LoadedCheckpoint>& ck = found->checkpoint;
  if (!ck) return Status::OK();
  engine_->ImportFull(ck->master, ck->state, ck->meta.applied_steps);
  engine_->loss_scaler().Restore(ck->meta.scaler);
  rng_ = Rng(ck->meta.rng);
  step_ = ck->meta.step;
  epoch_ = ck->meta.epoch;
  position_ = ck->meta.sample_position;
  result_.resumed_from_step = step_;
  if (talk_)
    fmt::print(runtime_.out, "resumed from {} (step {}, saved by {} ranks at ZeRO stage {}{})\n", ck->path, step_,
               ck->meta.world_size, ck->meta.zero_stage,
               ck->meta.run_id.empty() || ck->meta.run_id == runtime_.run_id ? ""
                                                                               : ", run " + ck->meta.run_id);
  return Status::OK();
}

Status Trainer::PlanSteps() {
  steps_per_epoch_ = sampler_.num_samples() / per_step_;
  if (steps_per_epoch_ == 0)
    return Status::InvalidArgument(fmt::format(
        "train_batch_size {} is larger than the data set ({} samples)", global_batch_,
        data_->train.n));
  total_steps_ = steps_per_epoch_ * config_.epochs;
  if (config_.max_steps > 0) total_steps_ = std::min(total_steps_, config_.max_steps);
  return Status::OK();
}

Status Trainer::OpenMetrics() {
  if (comm_.rank() != 0 || config_.metrics.dir.empty()) return Status::OK();
  DS_ASSIGN_OR_RETURN(metrics_, MetricsWriter::Open(config_.metrics.dir));
  return Status::OK();
}

void Trainer::PrintBanner() const {
  if (!talk_) return;
  const MemoryReport& m = result_.memory;
  fmt::print(runtime_.out,
             "dstrain: {} ranks on {}, ZeRO stage {}, {}, {} params, batch {} ({} x {} micro x {} "
             "ranks), {} steps/epoch\n"
             "dstrain: memory/rank: params {:.2f} MB, grads {:.2f} MB, optimizer {:.2f} MB, "
             "total {:.2f} MB (ZeRO formula {:.2f} MB)\n",
             comm_.size(), runtime_.device, zero_.stage, PrecisionName(zero_.precision), model_.num_params(),
             global_batch_, micro_, gas_, comm_.size(), steps_per_epoch_, m.params / 1e6,
             m.grads / 1e6, m.optimizer / 1e6, m.total() / 1e6, m.formula / 1e6);
  std::fflush(runtime_.out);  // a worker stopped before its first progress line still said what it ran
}

Status Trainer::TrainEpochs() {
  const int64_t every = config_.checkpoint.every_steps;
  while (step_ < total_steps_ && epoch_ < config_.epochs) {
    const std::vector<int64_t> indices = sampler_.Indices(epoch_, position_);
    const int64_t steps_now = static_cast<int64_t>(indices.size()) / per_step_;
    int64_t k = 0;
    for (; k < steps_now && step_ < total_steps_; ++k) {
      TrainStep(indices, k);
      if (every > 0 && step_ % every == 0) {
        const bool epoch_done = k + 1 == steps_now;
        DS_RETURN_IF_ERROR(Save(epoch_done ? epoch_ + 1 : epoch_, epoch_done ? 0 : position_));
        last_saved_ = step_;
      }
    }
    const bool epoch_finished = k == steps_now;
    if (epoch_finished) {
      ++epoch_;
      position_ = 0;
    }
    if ((epoch_finished && config_.eval.every_epoch) || step_ >= total_steps_)
      EvaluateEpoch(epoch_finished);
  }
  return Status::OK();
}

// One optimizer step over gas micro-batches of this rank's `indices` (step
// k of the epoch's remainder), then the heartbeat and the report. The step's
// compute time is its wall time less its time in collectives, known only when
// the engine's collectives go through timed_ (not a device plugin's own).
void Trainer::TrainStep(const std::vector<int64_t>& indices, int64_t k) {
  if (runtime_.interrupt != nullptr && *runtime_.interrupt)
    throw CommError(fmt::format("rank {}: stopped before step {} for an in-place reshape", comm_.rank(), step_ + 1));
  const auto start = std::chrono::steady_clock::now();
  const auto in_collectives = timed_.in_collectives();
  AccumulateGradients(indices, k);
  const double lr = LearningRate(ds_.scheduler, ds_.optimizer.lr, engine_->applied_steps());
  StepResult sr = engine_->Step(static_cast<float>(lr));
  ++step_;
  position_ += global_batch_;
  samples_here_ += global_batch_;
  evaluated_last_ = false;
  const auto wall = std::chrono::steady_clock::now() - start;
  StepCost cost{-1, per_step_};
  if (!runtime_.make_engine)
    cost.compute_seconds = std::chrono::duration<double>(wall - (timed_.in_collectives() - in_collectives)).count();
  Report(sr, lr, std::chrono::duration<double>(wall).count(), cost);
  if (steps_here_ == 1 && runtime_.on_first_step) runtime_.on_first_step(step_);
}

void Trainer::AccumulateGradients(const std::vector<int64_t>& indices, int64_t k) {
  for (int m = 0; m < gas_; ++m)
    engine_->MicroBatchSamples(data_->train, &indices[k * per_step_ + m * micro_], micro_, global_batch_,
                               m == gas_ - 1);
}

// After a step: the global loss (once per steps_per_print window: it costs a
// latency-bound allreduce, as DeepSpeed's prints do, and on a GPU the one
// host wait for the window's losses; and at the end), the heartbeat,
// progress and metrics. `step_seconds` so far excludes the report.
void Trainer::Report(const StepResult& sr, double lr, double step_seconds, const StepCost& cost) {
  const auto start = std::chrono::steady_clock::now();
  const bool report = step_ % print_every_ == 0 || step_ == total_steps_;
  if (report) {
    const BatchStats mine = engine_->TakeTrainStats();
    double window[2] = {mine.loss_sum, static_cast<double>(mine.count)};
    comm_.AllReduceSum(window, 2);
    loss_ = window[0] / std::max(1.0, window[1]);
    result_.losses.push_back(loss_);
  }
  if (runtime_.heartbeat) {
    StepCost said = cost;
    said.save_stall_seconds = std::exchange(unsaid_save_stall_, -1);
    if (report) said.loss = loss_;  // the window's global mean: the report's loss curve
    runtime_.heartbeat->Beat(step_, said);
  }
  const double seconds = step_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  train_seconds_ += seconds;
  if (++steps_here_ > kSteadyWarmupSteps) {
    ++result_.steady_steps;
    result_.steady_seconds += seconds;
  }
  const double sps = train_seconds_ > 0 ? samples_here_ / train_seconds_ : 0;
  if (talk_ && (report || runtime_.tty)) progress_->Step(step_, loss_, sps);
  if (metrics_ && report)
    metrics_->Log(step_, {{"train/loss", loss_}, {"train/lr", lr}, {"train/samples_per_sec", sps},
                          {"train/grad_norm", sr.grad_norm}, {"train/loss_scale", sr.loss_scale},
                          {"train/skipped", sr.skipped ? 1.0 : 0.0}});
}

void Trainer::EvaluateEpoch(bool epoch_finished) {
  const Evaluation ev = EvaluateGlobal(*engine_, data_->test, comm_);
  result_.epoch_accuracy.push_back(ev.accuracy);
  result_.test_accuracy = ev.accuracy;
  evaluated_last_ = true;
  if (runtime_.heartbeat) {  // a second beat of this step, for the report's accuracy curve
    StepCost said;
    said.accuracy = ev.accuracy;
    runtime_.heartbeat->Beat(step_, said);
  }
  if (talk_)
    progress_->Line(fmt::format("epoch {}{}: step {}, test accuracy {:.4f}, test loss {:.4f}",
                                epoch_finished ? epoch_ : epoch_ + 1,
                                epoch_finished ? "" : " (partial)", step_, ev.accuracy, ev.loss));
  if (metrics_) {
    metrics_->Log(step_, {{"test/accuracy", ev.accuracy}, {"test/loss", ev.loss}});
    metrics_->Flush();
  }
}

Status Trainer::Save(int64_t at_epoch, int64_t at_position) {
  if (runtime_.checkpoint_dir.empty() && runtime_.snapshot_dir.empty()) return Status::OK();
  CheckpointMeta meta;
  meta.step = step_;
  meta.applied_steps = engine_->applied_steps();
  meta.epoch = at_epoch;
  meta.sample_position = at_position;
  meta.rng = rng_.state();
  meta.scaler = engine_->loss_scaler().state();
  meta.run_id = runtime_.run_id;
  meta.zero_stage = zero_.stage;
  meta.config_hash = ConfigHash();
  meta.num_params = model_.num_params();
  meta.state_slots = optimizer_->state_slots();
  const auto start = std::chrono::steady_clock::now();
  Status st;
  if (!runtime_.snapshot_dir.empty()) {  // the rank copies its shard; its helper does the rest
    if (!snapshots_) {
      DS_CHECK_MSG(runtime_.snapshot_comm != nullptr || comm_.size() == 1, "snapshots need runtime.snapshot_comm");
      snapshots_ = std::make_unique<SnapshotWriter>(
          runtime_.snapshot_dir, runtime_.snapshot_comm != nullptr ? *runtime_.snapshot_comm : alone_);
    }
    st = snapshots_->Complete();  // the previous save (its helper has had a whole interval)
    if (st.ok()) {
      engine_->ExportShardInto(snapshots_->spare());
      st = snapshots_->Begin(meta);
    }
  } else {
    st = SaveCheckpoint(runtime_.checkpoint_dir, meta, engine_->ExportShard(), comm_, config_.checkpoint.keep);
  }
  // The snapshot helper's communicator failed: as for any collective, the
  // generation is over (a restart, or an in-place reshape).
  if (st.code() == Status::Code::kUnavailable) throw CommError(st.message());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++result_.saves;
  result_.save_seconds += seconds;
  result_.save_ms.push_back(1e3 * seconds);
  unsaid_save_stall_ = seconds;
  return st;
}

// The last snapshot handed over; the wait counts as its save's.
Status Trainer::CompleteSnapshot() {
  if (!snapshots_ || !snapshots_->pending()) return Status::OK();
  const auto start = std::chrono::steady_clock::now();
  Status st = snapshots_->Complete();
  if (st.code() == Status::Code::kUnavailable) throw CommError(st.message());  // as in Save
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result_.save_seconds += seconds;
  result_.save_ms.back() += 1e3 * seconds;
  return st;
}

// The end: the final accuracy unless the last step was just evaluated, and a
// checkpoint of the last step unless it was just saved (or only resumed).
Status Trainer::Finish() {
  if (talk_) progress_->Finish();
  if (!evaluated_last_)
    result_.test_accuracy = EvaluateGlobal(*engine_, data_->test, comm_).accuracy;
  if (last_saved_ != step_ && step_ > 0 && step_ != result_.resumed_from_step)
    DS_RETURN_IF_ERROR(Save(epoch_, position_));
  DS_RETURN_IF_ERROR(CompleteSnapshot());
  result_.steps = step_;
  result_.samples_per_sec = train_seconds_ > 0 ? samples_here_ / train_seconds_ : 0;
  const double with_saves = train_seconds_ + result_.save_seconds;
  result_.samples_per_sec_with_saves = with_saves > 0 ? samples_here_ / with_saves : 0;
  if (metrics_) metrics_->Flush();
  return Status::OK();
}

Result<TrainResult> Train(const TrainerConfig& config, Communicator& comm,
                          const TrainerRuntime& runtime) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(config, comm, runtime));
  return trainer->Run();
}

}  // namespace ds::rt
