// DeviceZeroEngine against the CPU ZeroEngine (gpu label), one process:
// 20 steps of every ZeRO stage and precision give the same master weights
// within the format's tolerance, with gradient accumulation, clipping and
// fp16's skipped steps; the memory report is the CPU engine's; a shard
// exported on the device loads into the CPU engine and back. (Several
// ranks on one GPU: the hybrid mode, dstrain_gpu_test.cc.)
#include "runtime/device/device_zero_engine.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <gloo/rendezvous/hash_store.h>

#include "runtime/device/nccl_communicator.h"
#include "runtime/model/data.h"
#include "runtime/zero_engine.h"
#include "tests/runtime/device/device_test_util.h"

namespace ds::rt::dev {
namespace {

using testing::MaxRelDiff;

constexpr int kBatch = 12;

const Dataset& Data() {
  static Dataset d = MakeSynthetic({.samples = 600, .features = 20, .classes = 5, .seed = 3});
  return d;
}

struct Spec {
  int stage = 0;
  Precision precision = Precision::kFp32;
  int gas = 1;
  double clip = 0;
  OptimizerType optimizer = OptimizerType::kAdam;
};

// Trains 20 steps on `engine`; returns the skipped steps' indices. Odd
// steps pass the batch from host memory, even ones as sample indices (the
// trainer's way: the device engine gathers from its copy of the data set).
std::vector<int> Train(Engine& engine, const Spec& spec) {
  engine.InitParams(7);
  std::vector<int> skipped;
  const int micro = kBatch / spec.gas;
  std::vector<int64_t> index(micro);
  for (int step = 0; step < 20; ++step) {
    for (int m = 0; m < spec.gas; ++m) {
      const int64_t first = int64_t(step) * kBatch + m * micro;
      const bool last = m == spec.gas - 1;
      if (step % 2 == 1) {
        engine.MicroBatch(Data().sample(first), Data().y.data() + first, micro, kBatch, last);
        continue;
      }
      for (int i = 0; i < micro; ++i) index[i] = (first + 37 * i) % Data().n;  // not contiguous
      engine.MicroBatchSamples(Data(), index.data(), micro, kBatch, last);
    }
    if (engine.Step(1e-2f).skipped) skipped.push_back(step);
  }
  return skipped;
}

ZeroOptions Options(const Spec& spec) {
  ZeroOptions zo;
  zo.stage = spec.stage;
  zo.precision = spec.precision;
  zo.reduce_bucket_size = 100;
  zo.gradient_clipping = spec.clip;
  zo.loss_scaler.initial_scale_power = 22;  // overflows fp16 at first
  zo.loss_scaler.window = 5;
  return zo;
}

// fp32: equal up to summation order. 16-bit: as close as the CPU engine's
// bf16 run is to its fp32 run (zero_engine_test.cc): Adam's normalized
// steps turn small rounding differences into whole steps where a
// gradient is near zero.
bool Close(const std::vector<float>& a, const std::vector<float>& b, Precision p) {
  REQUIRE(a.size() == b.size());
  double max_rel = 0, max_abs = 0, sum_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - b[i]);
    max_rel = std::max(max_rel, d / std::max(1.0, std::fabs(double(b[i]))));
    max_abs = std::max(max_abs, d);
    sum_abs += d;
  }
  if (p == Precision::kFp32) return max_rel < 1e-4;
  return sum_abs / a.size() < 0.01 && max_abs < 0.25;
}

// One process: the model's shapes, the CPU engine's communicator and the
// device engine's (the hybrid mode's staging over the same one).
struct Bed {
  Mlp model{[] {
    MlpConfig mc;
    mc.sizes = {20, 16, 12, 5};
    return mc;
  }()};
  LocalCommunicator local;
  std::unique_ptr<DeviceComm> staged = MakeStagedDeviceComm(local);
};

TEST_CASE_METHOD(Bed, "device engine: every ZeRO stage and precision trains as the CPU engine", "[gpu]") {
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    for (int stage : {0, 1, 2, 3}) {
      for (Spec spec : {Spec{stage, p, 1, 0, OptimizerType::kAdam}, Spec{stage, p, 2, 0.5, OptimizerType::kSgd}}) {
        CAPTURE(PrecisionName(p), stage, spec.gas, spec.clip);
        OptimizerConfig oc;
        oc.type = spec.optimizer;
        oc.momentum = 0.9;
        auto opt = MakeOptimizer(oc);
        ZeroEngine cpu(model, local, *opt, Options(spec));
        DeviceZeroEngine gpu(model, *staged, *opt, Options(spec), false);
        const std::vector<int> cpu_skips = Train(cpu, spec), gpu_skips = Train(gpu, spec);
        CHECK(gpu_skips == cpu_skips);
        if (p == Precision::kFp16) CHECK_FALSE(gpu_skips.empty());  // the scaler did back off
        CHECK(Close(gpu.GatherMasterParams(), cpu.GatherMasterParams(), p));
        CHECK(Close(gpu.GatherComputeParams(), cpu.GatherComputeParams(), p));
        CHECK(gpu.applied_steps() == cpu.applied_steps());
        const MemoryReport gm = gpu.Memory(), cm = cpu.Memory();
        CHECK(gm.params == cm.params);
        CHECK(gm.grads == cm.grads);
        CHECK(gm.optimizer == cm.optimizer);
        CHECK(gm.formula == cm.formula);
        // Evaluation on the device path agrees too.
        const BatchStats ge = gpu.EvaluateRange(Data(), 0, 600), ce = cpu.EvaluateRange(Data(), 0, 600);
        CHECK(ge.count == 600);
        CHECK(ge.loss_sum == Approx(ce.loss_sum).epsilon(p == Precision::kFp32 ? 1e-4 : 3e-2));
      }
    }
  }
}

// backend: nccl's device path at world 1 (one-rank ncclCommInitRank works on
// one GPU): every wait polls the stream, and before issue 34 the first
// cudaErrorNotReady it saw was blamed on the next kernel launch.
TEST_CASE_METHOD(Bed, "device engine on a one-rank NCCL communicator trains as the CPU engine", "[gpu]") {
  gloo::rendezvous::HashStore store;
  NcclOptions no;
  no.timeout = std::chrono::seconds(30);
  auto nccl = NcclCommunicator::Connect(store, 0, 1, no);
  std::unique_ptr<DeviceComm> comm = MakeNcclDeviceComm(*nccl);
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    for (int stage : {0, 1, 2, 3}) {
      CAPTURE(PrecisionName(p), stage);
      Spec spec{stage, p, 2, 0.5, OptimizerType::kAdam};
      OptimizerConfig oc;
      auto opt = MakeOptimizer(oc);
      ZeroEngine cpu(model, local, *opt, Options(spec));
      DeviceZeroEngine gpu(model, *comm, *opt, Options(spec), false);
      CHECK(Train(gpu, spec) == Train(cpu, spec));
      CHECK(Close(gpu.GatherMasterParams(), cpu.GatherMasterParams(), p));
      const BatchStats ge = gpu.EvaluateRange(Data(), 0, 600), ce = cpu.EvaluateRange(Data(), 0, 600);
      CHECK(ge.loss_sum == Approx(ce.loss_sum).epsilon(p == Precision::kFp32 ? 1e-4 : 3e-2));
    }
  }
}

TEST_CASE_METHOD(Bed, "device engine: offload_optimizer steps on the host to the same weights, states off the GPU", "[gpu]") {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    for (int stage : {0, 1, 2, 3}) {
      CAPTURE(PrecisionName(p), stage);
      Spec spec{stage, p, 2, 0.5, OptimizerType::kAdam};
      OptimizerConfig oc;
      auto opt = MakeOptimizer(oc);
      ZeroOptions offloaded = Options(spec);
      offloaded.offload_optimizer = true;
      ZeroEngine cpu(model, local, *opt, Options(spec));
      DeviceZeroEngine gpu(model, *staged, *opt, offloaded, false);
      CHECK(Train(gpu, spec) == Train(cpu, spec));
      CHECK(Close(gpu.GatherMasterParams(), cpu.GatherMasterParams(), p));
      CHECK(gpu.Memory().optimizer == 0);  // master and Adam's state are on the host
      const ShardState a = gpu.ExportShard(), b = cpu.ExportShard();
      CHECK(a.state.size() == b.state.size());
    }
  }
}

TEST_CASE_METHOD(Bed, "device engine: a shard exported on the GPU resumes on the CPU and back", "[gpu]") {
  OptimizerConfig oc;
  auto opt = MakeOptimizer(oc);
  Spec spec;
  spec.stage = 2;
  DeviceZeroEngine gpu(model, *staged, *opt, Options(spec), false);
  Train(gpu, spec);
  const ShardState shard = gpu.ExportShard();  // world 1: the whole state
  ZeroEngine cpu(model, local, *opt, Options(spec));
  cpu.ImportFull(shard.master, shard.state, gpu.applied_steps());
  CHECK(cpu.GatherMasterParams() == gpu.GatherMasterParams());
  // And back: the CPU's shard into a fresh device engine of another stage.
  Spec other = spec;
  other.stage = 3;
  DeviceZeroEngine again(model, *staged, *opt, Options(other), false);
  const ShardState back = cpu.ExportShard();
  again.ImportFull(back.master, back.state, cpu.applied_steps());
  CHECK(again.GatherMasterParams() == cpu.GatherMasterParams());
  ShardState round;
  again.ExportShardInto(&round);
  CHECK(round.state == back.state);
  // One more identical step on both.
  for (Engine* e : {static_cast<Engine*>(&cpu), static_cast<Engine*>(&again)}) {
    e->MicroBatch(Data().sample(0), Data().y.data(), kBatch, kBatch, true);
    e->Step(1e-2f);
  }
  CHECK(MaxRelDiff(again.GatherMasterParams(), cpu.GatherMasterParams()) < 1e-5);
}

}  // namespace
}  // namespace ds::rt::dev
