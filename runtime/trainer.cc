#include "runtime/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "common/log.h"
#include "common/step_heartbeat.h"
#include "runtime/checkpoint.h"
#include "runtime/model/data.h"
#include "runtime/metrics.h"
#include "runtime/progress.h"
#include "runtime/numeric/rng.h"
#include "runtime/model/scheduler.h"

namespace ds::rt {
namespace {

// A ParamSource over a full fp32 vector (evaluation).
class FullParams : public ParamSource {
 public:
  FullParams(const Mlp& model, std::vector<float> p) : model_(model), p_(std::move(p)) {}
  const float* Acquire(int layer) override { return p_.data() + model_.layer(layer).offset; }
  void Release(int) override {}

 private:
  const Mlp& model_;
  std::vector<float> p_;
};

struct Datasets {
  Dataset train, test;
};

Result<Datasets> LoadData(const DataSection& d) {
  Datasets out;
  if (d.dataset == "synthetic") {
    Dataset all = MakeSynthetic(d.synthetic);
    // Last sixth is the test set (same class centers as training).
    const int64_t n_test = all.n / 6, n_train = all.n - n_test;
    auto split = [&](int64_t lo, int64_t hi) {
      Dataset s;
      s.n = hi - lo;
      s.features = all.features;
      s.classes = all.classes;
      s.x.assign(all.x.begin() + lo * all.features, all.x.begin() + hi * all.features);
      s.y.assign(all.y.begin() + lo, all.y.begin() + hi);
      return s;
    };
    out.train = split(0, n_train);
    out.test = split(n_train, all.n);
    return out;
  }
  DS_ASSIGN_OR_RETURN(out.train, LoadFashionMnist(d.path, true, d.normalize));
  DS_ASSIGN_OR_RETURN(out.test, LoadFashionMnist(d.path, false, d.normalize));
  return out;
}

Precision PrecisionOf(const DsConfig& ds) {
  if (ds.fp16.enabled) return Precision::kFp16;
  if (ds.bf16) return Precision::kBf16;
  return Precision::kFp32;
}

// Global test accuracy and loss: every rank evaluates its slice.
std::pair<double, double> Evaluate(ZeroEngine& engine, Mlp& model, const Dataset& test,
                                   Communicator& comm) {
  FullParams params(model, engine.GatherComputeParams());
  const int64_t lo = test.n * comm.rank() / comm.size();
  const int64_t hi = test.n * (comm.rank() + 1) / comm.size();
  double sums[3] = {0, 0, 0};  // correct, count, loss
  for (int64_t i = lo; i < hi; i += 1000) {
    const int b = static_cast<int>(std::min<int64_t>(1000, hi - i));
    BatchStats st = model.Evaluate(params, test.sample(i), test.y.data() + i, b);
    sums[0] += st.correct;
    sums[1] += st.count;
    sums[2] += st.loss_sum;
  }
  comm.AllReduceSum(sums, 3);
  return {sums[1] > 0 ? sums[0] / sums[1] : 0, sums[1] > 0 ? sums[2] / sums[1] : 0};
}

}  // namespace

Result<TrainResult> Train(const TrainerConfig& config, Communicator& comm,
                          const TrainerRuntime& runtime) {
  const int rank = comm.rank(), world = comm.size();
  const bool talk = rank == 0 && !runtime.quiet;
  const DsConfig& ds = config.ds;
  DS_ASSIGN_OR_RETURN(Datasets data, LoadData(config.data));
  const auto& sizes = config.model.sizes;
  if (sizes.front() != data.train.features || sizes.back() != data.train.classes)
    return Status::InvalidArgument(fmt::format(
        "trainer.model.layers: input {} and output {} must match the data set's {} features "
        "and {} classes", sizes.front(), sizes.back(), data.train.features, data.train.classes));

  Mlp model(config.model);
  auto optimizer = MakeOptimizer(ds.optimizer);
  ZeroOptions zo;
  zo.stage = ds.zero.stage;
  zo.precision = PrecisionOf(ds);
  zo.reduce_bucket_size = static_cast<size_t>(std::max<int64_t>(1, ds.zero.reduce_bucket_size));
  zo.overlap_comm = ds.zero.overlap_comm;
  zo.gradient_clipping = ds.gradient_clipping;
  zo.loss_scaler = ds.loss_scaler();
  ZeroEngine engine(model, comm, *optimizer, zo);
  engine.InitParams(config.seed);
  Rng rng(config.seed);

  TrainResult result;
  result.memory = engine.Memory();
  int64_t step = 0, epoch = 0, position = 0;
  if (!runtime.checkpoint_dir.empty()) {
    auto ck = LoadNewestCheckpoint(runtime.checkpoint_dir, model.num_params(),
                                   optimizer->state_slots());
    if (ck) {
      engine.ImportFull(ck->master, ck->state, ck->meta.applied_steps);
      engine.loss_scaler().Restore(ck->meta.scaler);
      rng = Rng(ck->meta.rng);
      step = ck->meta.step;
      epoch = ck->meta.epoch;
      position = ck->meta.sample_position;
      result.resumed_from_step = step;
      if (ck->meta.config_hash != ConfigHash(runtime.config_text))
        DS_LOG(Warn, Ckpt) << ck->path << ": saved with another config (hash "
                           << ck->meta.config_hash << "); continuing";
      if (talk)
        fmt::print(runtime.out, "resumed from {} (step {}, saved by {} ranks at ZeRO stage {})\n",
                   ck->path, step, ck->meta.world_size, ck->meta.zero_stage);
    }
  }

  const int micro = static_cast<int>(ds.batch.micro_batch), gas = static_cast<int>(ds.batch.gas);
  const int64_t global_batch = ds.batch.train_batch_size;
  const int per_step = micro * gas;  // samples per rank per step
  DistributedSampler sampler({.dataset_size = data.train.n, .rank = rank, .world_size = world,
                              .seed = config.seed, .shuffle = config.data.shuffle,
                              .drop_last = config.data.drop_last});
  const int64_t steps_per_epoch = sampler.num_samples() / per_step;
  if (steps_per_epoch == 0)
    return Status::InvalidArgument(fmt::format(
        "train_batch_size {} is larger than the data set ({} samples)", global_batch,
        data.train.n));
  int64_t total_steps = steps_per_epoch * config.epochs;
  if (config.max_steps > 0) total_steps = std::min(total_steps, config.max_steps);

  std::unique_ptr<MetricsWriter> metrics;
  if (rank == 0 && !config.metrics.dir.empty()) {
    auto m = MetricsWriter::Open(config.metrics.dir);
    if (!m.ok()) return m.status();
    metrics = std::move(m).value();
  }
  Progress progress(runtime.out, {.tty = runtime.tty, .interval = 1,
                                  .total_steps = total_steps, .start_step = step,
                                  .epochs = config.epochs});
  if (talk)
    fmt::print(runtime.out,
               "dstrain: {} ranks, ZeRO stage {}, {}, {} params, batch {} ({} x {} micro x {} "
               "ranks), {} steps/epoch\n"
               "dstrain: memory/rank: params {:.2f} MB, grads {:.2f} MB, optimizer {:.2f} MB, "
               "total {:.2f} MB (ZeRO formula {:.2f} MB)\n",
               world, zo.stage, PrecisionName(zo.precision), model.num_params(), global_batch,
               micro, gas, world, steps_per_epoch, result.memory.params / 1e6,
               result.memory.grads / 1e6, result.memory.optimizer / 1e6,
               result.memory.total() / 1e6, result.memory.formula / 1e6);

  auto save = [&](int64_t at_epoch, int64_t at_position) -> Status {
    if (runtime.checkpoint_dir.empty()) return Status::OK();
    CheckpointMeta meta;
    meta.step = step;
    meta.applied_steps = engine.applied_steps();
    meta.epoch = at_epoch;
    meta.sample_position = at_position;
    meta.rng = rng.state();
    meta.scaler = engine.loss_scaler().state();
    meta.zero_stage = zo.stage;
    meta.config_hash = ConfigHash(runtime.config_text);
    meta.num_params = model.num_params();
    meta.state_slots = optimizer->state_slots();
    return SaveCheckpoint(runtime.checkpoint_dir, meta, engine.ExportShard(), comm,
                          config.checkpoint.keep);
  };

  std::vector<float> xbuf(static_cast<size_t>(micro) * data.train.features);
  std::vector<int32_t> ybuf(micro);
  const int64_t print_every = std::max<int64_t>(1, ds.steps_per_print);
  double window[2] = {0, 0};  // loss sum, samples since the last report (this rank)
  double loss = 0;            // global mean loss of the last window
  double train_seconds = 0;  // in training steps only (no evaluation, no checkpoints)
  int64_t samples_here = 0;
  int64_t last_saved = -1;
  bool evaluated_last = false;
  while (step < total_steps && epoch < config.epochs) {
    const std::vector<int64_t> idx = sampler.Indices(epoch, position);
    const int64_t steps_now = static_cast<int64_t>(idx.size()) / per_step;
    int64_t k = 0;
    for (; k < steps_now && step < total_steps; ++k) {
      const auto step_start = std::chrono::steady_clock::now();
      double sums[2] = {0, 0};  // loss sum, count
      for (int m = 0; m < gas; ++m) {
        for (int i = 0; i < micro; ++i) {
          const int64_t s = idx[k * per_step + m * micro + i];
          std::memcpy(xbuf.data() + static_cast<size_t>(i) * data.train.features,
                      data.train.sample(s), data.train.features * sizeof(float));
          ybuf[i] = data.train.y[s];
        }
        BatchStats st = engine.MicroBatch(xbuf.data(), ybuf.data(), micro, global_batch, m == gas - 1);
        sums[0] += st.loss_sum;
        sums[1] += st.count;
      }
      const double lr = LearningRate(ds.scheduler, ds.optimizer.lr, engine.applied_steps());
      StepResult sr = engine.Step(static_cast<float>(lr));
      ++step;
      position += global_batch;
      samples_here += global_batch;
      evaluated_last = false;
      window[0] += sums[0];
      window[1] += sums[1];
      // The global loss costs a (latency-bound) allreduce: once per
      // steps_per_print window, like DeepSpeed's prints, and at the end.
      const bool report = step % print_every == 0 || step == total_steps;
      if (report) {
        comm.AllReduceSum(window, 2);
        loss = window[0] / std::max(1.0, window[1]);
        result.losses.push_back(loss);
        window[0] = window[1] = 0;
      }
      if (runtime.heartbeat) runtime.heartbeat->Beat(step);
      train_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
      const double sps = train_seconds > 0 ? samples_here / train_seconds : 0;
      if (talk && (report || runtime.tty)) progress.Step(epoch, step, loss, sps);
      if (metrics && report)
        metrics->Log(step, {{"train/loss", loss}, {"train/lr", lr}, {"train/samples_per_sec", sps},
                            {"train/grad_norm", sr.grad_norm}, {"train/loss_scale", sr.loss_scale},
                            {"train/skipped", sr.skipped ? 1.0 : 0.0}});
      if (config.checkpoint.every_steps > 0 && step % config.checkpoint.every_steps == 0) {
        const bool epoch_done = k + 1 == steps_now;
        DS_RETURN_IF_ERROR(save(epoch_done ? epoch + 1 : epoch, epoch_done ? 0 : position));
        last_saved = step;
      }
    }
    const bool epoch_finished = k == steps_now;
    if (epoch_finished) {
      ++epoch;
      position = 0;
    }
    if ((epoch_finished && config.eval.every_epoch) || step >= total_steps) {
      auto [acc, test_loss] = Evaluate(engine, model, data.test, comm);
      result.epoch_accuracy.push_back(acc);
      result.test_accuracy = acc;
      evaluated_last = true;
      if (talk)
        progress.Line(fmt::format("epoch {}{}: step {}, test accuracy {:.4f}, test loss {:.4f}",
                                  epoch_finished ? epoch : epoch + 1,
                                  epoch_finished ? "" : " (partial)", step, acc, test_loss));
      if (metrics) {
        metrics->Log(step, {{"test/accuracy", acc}, {"test/loss", test_loss}});
        metrics->Flush();
      }
    }
  }
  if (talk) progress.Finish();
  if (!evaluated_last) result.test_accuracy = Evaluate(engine, model, data.test, comm).first;
  if (last_saved != step && step > 0 && step != result.resumed_from_step)
    DS_RETURN_IF_ERROR(save(epoch, position));
  result.steps = step;
  result.samples_per_sec = train_seconds > 0 ? samples_here / train_seconds : 0;
  if (metrics) metrics->Flush();
  return result;
}

}  // namespace ds::rt
