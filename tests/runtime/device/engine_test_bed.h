// The device engine tests' common ground (gpu label): a small MLP (20-16-12-5,
// 605 parameters), its synthetic data set, a training loop that runs the
// trainer's two ways of passing a batch, the ZeRO options and the
// comparison with the CPU engine. Header-only; one process, no sockets.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/device/device_comm.h"
#include "runtime/engine/engine.h"
#include "runtime/model/data.h"
#include "runtime/model/model.h"
#include "runtime/model/optimizer.h"

namespace ds::rt::dev::testing {

inline constexpr int kBatch = 12;

inline const Dataset& Data() {
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

// Trains `steps` steps on `engine` as rank `rank` of `world` (its share of
// every global batch of kBatch samples, so the ranks together see what one
// process sees); returns the skipped steps' indices. Odd steps pass the
// batch from host memory, even ones as sample indices (the trainer's way:
// the device engine gathers from its copy of the data set).
inline std::vector<int> Train(Engine& engine, const Spec& spec, int rank = 0, int world = 1, int steps = 20) {
  engine.InitParams(7);
  std::vector<int> skipped;
  const int per_rank = kBatch / world, micro = per_rank / spec.gas;
  std::vector<int64_t> index(micro);
  for (int step = 0; step < steps; ++step) {
    for (int m = 0; m < spec.gas; ++m) {
      const int offset = rank * per_rank + m * micro;  // in the global batch
      const int64_t first = int64_t(step) * kBatch + offset;
      const bool last = m == spec.gas - 1;
      if (step % 2 == 1) {
        engine.MicroBatch(Data().sample(first), Data().y.data() + first, micro, kBatch, last);
        continue;
      }
      for (int i = 0; i < micro; ++i)  // not contiguous
        index[i] = (int64_t(step) * kBatch + 37 * (offset + i)) % Data().n;
      engine.MicroBatchSamples(Data(), index.data(), micro, kBatch, last);
    }
    if (engine.Step(1e-2f).skipped) skipped.push_back(step);
  }
  return skipped;
}

inline ZeroOptions Options(const Spec& spec) {
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
inline bool Close(const std::vector<float>& a, const std::vector<float>& b, Precision p) {
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

}  // namespace ds::rt::dev::testing
