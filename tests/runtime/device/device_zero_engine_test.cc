// DeviceZeroEngine against the CPU ZeroEngine (gpu label), one process:
// 20 steps of every ZeRO stage and precision give the same master weights
// within the format's tolerance, with gradient accumulation, clipping and
// fp16's skipped steps; after two steps every layer has moved and each
// layer's update is within a few of the format's ulps of the CPU's; ranks
// as threads (world 2 and 3, 605 parameters: uneven shards) match one
// process; offloaded optimizer states hold the CPU engine's values; the
// memory report is the CPU engine's; a shard exported on the device loads
// into the CPU engine and back. (Which collectives the engine makes, in
// what order, and its waits: device_zero_engine_collectives_test.cc.
// Several ranks as processes on one GPU: the hybrid mode,
// dstrain_gpu_test.cc.)
#include "runtime/device/device_zero_engine.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/hash_store.h>

#include "runtime/comm/gloo_communicator.h"
#include "runtime/device/nccl_communicator.h"
#include "runtime/model/data.h"
#include "runtime/engine/zero_engine.h"
#include "tests/runtime/device/device_test_util.h"
#include "tests/runtime/device/engine_test_bed.h"

namespace ds::rt::dev {
namespace {

using namespace testing;  // MaxRelDiff, Quantized; the bed: Bed, Spec, Train, Options, Close, Data, kBatch

// One unit in the last place of `fmt` at magnitude |x| (normal numbers).
double Ulp(double x, Precision fmt) {
  const int mantissa = fmt == Precision::kFp32 ? 23 : fmt == Precision::kFp16 ? 10 : 7;
  if (x == 0) return 0;
  return std::ldexp(1.0, std::ilogb(x) - mantissa);
}

// The layers' weight and bias ranges in the flat parameter vector.
struct Range {
  size_t begin, end;
  std::string name;
};
std::vector<Range> Tensors(const Mlp& model) {
  std::vector<Range> out;
  for (int l = 0; l < model.num_layers(); ++l) {
    const LayerShape& s = model.layer(l);
    const size_t w_end = s.offset + static_cast<size_t>(s.in) * s.out;
    out.push_back({s.offset, w_end, "W" + std::to_string(l)});
    out.push_back({w_end, s.offset + s.size(), "b" + std::to_string(l)});
  }
  return out;
}

// The tensors (weights or biases of a layer) of `after` equal to `before`
// everywhere: an engine that skips a layer's update leaves one.
std::vector<std::string> Unchanged(const Mlp& model, const std::vector<float>& before, const std::vector<float>& after) {
  std::vector<std::string> out;
  for (const Range& r : Tensors(model)) {
    bool moved = false;
    for (size_t i = r.begin; i < r.end && !moved; ++i) moved = before[i] != after[i];
    if (!moved) out.push_back(r.name);
  }
  return out;
}

// The tensors whose update (after - before) on the device differs from the
// CPU's by more than `ulps` units of `fmt` at the tensor's largest CPU
// update, with the worst difference in those units: an update is linear in
// the gradient (SGD), whose error is a few roundings in the format, so a
// tensor's update is off by a few of its ulps at worst; a layer that never
// updates, or updates with a wrong gradient, is off by many.
std::vector<std::string> UpdatesApart(const Mlp& model, const std::vector<float>& before, const std::vector<float>& gpu,
                                      const std::vector<float>& cpu, Precision fmt, double ulps) {
  std::vector<std::string> out;
  for (const Range& r : Tensors(model)) {
    double scale = 0, worst = 0;
    for (size_t i = r.begin; i < r.end; ++i) scale = std::max(scale, std::fabs(double(cpu[i]) - before[i]));
    for (size_t i = r.begin; i < r.end; ++i)
      worst = std::max(worst, std::fabs((double(gpu[i]) - before[i]) - (double(cpu[i]) - before[i])));
    const double unit = Ulp(scale, fmt);
    if (scale == 0 || worst > ulps * unit)
      out.push_back(r.name + ": " + std::to_string(unit > 0 ? worst / unit : worst) + " ulps (max update " +
                    std::to_string(scale) + ")");
  }
  return out;
}

// Each optimizer state slot of `a` within `rel` of `b`'s largest magnitude
// in that slot, element by element; a slot of zeros is a failure (the
// optimizer never ran).
bool StatesClose(const ShardState& a, const ShardState& b, double rel) {
  if (a.state.size() != b.state.size()) return false;
  for (size_t k = 0; k < a.state.size(); ++k) {
    if (a.state[k].size() != b.state[k].size()) return false;
    double scale = 0, worst = 0;
    for (size_t i = 0; i < b.state[k].size(); ++i) {
      scale = std::max(scale, std::fabs(double(b.state[k][i])));
      worst = std::max(worst, std::fabs(double(a.state[k][i]) - b.state[k][i]));
    }
    if (scale == 0 || !(worst <= rel * scale)) return false;
  }
  return true;
}

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
      // The states' values, not only their count: Adam's m and v after 20
      // steps, from the host step fed by the device's gradients.
      const ShardState a = gpu.ExportShard(), b = cpu.ExportShard();
      CHECK(a.state.size() == b.state.size());
      CHECK(a.state.size() == 2);
      CHECK(StatesClose(a, b, p == Precision::kFp32 ? 1e-4 : 5e-2));
    }
  }
}

// One and two steps of SGD with momentum from the same start, so the
// comparison is of the update and not of weights that barely moved (a
// 16-bit run whose layer never updated passed the 20-step comparison):
// every tensor of every layer has moved on both engines, and each tensor's
// update is within a few ulps of the format (at its largest update) of the
// CPU engine's. The fp16 scale starts low enough that no step is skipped.
TEST_CASE_METHOD(Bed, "device engine: after one and two steps every layer moved, updates within the format's ulps", "[gpu]") {
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    // fp32: summation order only; 16-bit: a few roundings of the gradient.
    const double ulps = p == Precision::kFp32 ? 1024 : 8;
    for (int stage : {0, 1, 2, 3}) {
      for (int steps : {1, 2}) {
        CAPTURE(PrecisionName(p), stage, steps);
        Spec spec{stage, p, 2, 0, OptimizerType::kSgd};
        OptimizerConfig oc;
        oc.type = OptimizerType::kSgd;
        oc.momentum = 0.9;
        auto opt = MakeOptimizer(oc);
        ZeroOptions zo = Options(spec);
        zo.loss_scaler.initial_scale_power = 8;
        ZeroEngine cpu(model, local, *opt, zo);
        DeviceZeroEngine gpu(model, *staged, *opt, zo, false);
        cpu.InitParams(7);
        const std::vector<float> before = cpu.GatherMasterParams();
        CHECK(Train(cpu, spec, 0, 1, steps).empty());
        CHECK(Train(gpu, spec, 0, 1, steps).empty());
        CHECK(gpu.applied_steps() == steps);
        const std::vector<float> c = cpu.GatherMasterParams(), g = gpu.GatherMasterParams();
        CHECK(Unchanged(model, before, c).empty());
        CHECK(Unchanged(model, before, g).empty());
        CHECK(UpdatesApart(model, before, g, c, p, ulps) == std::vector<std::string>{});
        // The copies the forward pass reads: on each side its master
        // rounded once into the format, bit for bit (a copy not refreshed
        // after the step, or refreshed from a stale master, differs).
        CHECK(gpu.GatherComputeParams() == testing::Quantized(g, p));
        CHECK(cpu.GatherComputeParams() == testing::Quantized(c, p));
      }
    }
  }
}

// Ranks as threads of one process on one GPU, each with its own Gloo
// communicator and the hybrid mode's staging: world 2 and 3 over the 605
// parameters (odd, and not a multiple of 3: every stage's partition is
// uneven, the last rank's shard shorter, and stage 3's layers split
// mid-tensor) train to one process's weights, and gather the compute copy
// and evaluate as that process does (stage 3 gathers every layer at once
// there: a padded piece must not spill past its layer). A shard boundary
// off by one, a tail dropped or a rank's piece written at another's offset
// fails here and not at world 1.
TEST_CASE_METHOD(Bed, "device engine: world 2 and 3 with uneven shards trains as one CPU process", "[gpu]") {
  REQUIRE(model.num_params() == 605);
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    for (int world : {2, 3}) {
      for (int stage : {0, 1, 2, 3}) {
        CAPTURE(PrecisionName(p), world, stage);
        const Spec spec{stage, p, 2, 0.5, OptimizerType::kAdam};
        OptimizerConfig oc;
        auto opt = MakeOptimizer(oc);
        ZeroEngine cpu(model, local, *opt, Options(spec));
        const std::vector<int> cpu_skips = Train(cpu, spec);
        const std::vector<float> want = cpu.GatherMasterParams(), want_compute = cpu.GatherComputeParams();
        const BatchStats want_eval = cpu.EvaluateRange(Data(), 0, 600);
        cpu.InitParams(7);
        const std::vector<float> initial = cpu.GatherMasterParams();

        gloo::rendezvous::HashStore store;
        std::vector<std::vector<float>> got(world), compute(world);
        std::vector<BatchStats> eval(world);
        std::vector<std::vector<int>> skips(world);
        std::vector<std::string> errors(world);
        std::vector<std::thread> ranks;
        for (int r = 0; r < world; ++r) {
          ranks.emplace_back([&, r] {
            try {
              GlooOptions go;
              go.timeout = std::chrono::seconds(60);
              auto gloo = GlooCommunicator::Connect(store, r, world, go);
              std::unique_ptr<DeviceComm> comm = MakeStagedDeviceComm(*gloo);
              Mlp mine(model.config());  // Mlp keeps per-call buffers: one per thread
              auto ropt = MakeOptimizer(oc);
              DeviceZeroEngine gpu(mine, *comm, *ropt, Options(spec), false);
              skips[r] = Train(gpu, spec, r, world);
              got[r] = gpu.GatherMasterParams();
              compute[r] = gpu.GatherComputeParams();  // stage 3: every layer gathered (padded) at once
              eval[r] = gpu.EvaluateRange(Data(), 0, 600);
            } catch (const std::exception& e) {
              errors[r] = e.what();
            }
          });
        }
        for (std::thread& t : ranks) t.join();
        for (int r = 0; r < world; ++r) {
          CAPTURE(r);
          CHECK(errors[r] == "");
          CHECK(skips[r] == cpu_skips);
          REQUIRE(got[r].size() == want.size());
          CHECK(Close(got[r], want, p));
          CHECK(Unchanged(model, initial, got[r]).empty());
          REQUIRE(compute[r].size() == want_compute.size());
          CHECK(Close(compute[r], want_compute, p));
          CHECK(eval[r].loss_sum == Approx(want_eval.loss_sum).epsilon(p == Precision::kFp32 ? 1e-4 : 3e-2));
        }
        CHECK(got[0] == got[world - 1]);  // every rank gathered the same weights
      }
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
