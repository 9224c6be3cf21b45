// The device engine's micro-batches without a host wait (gpu label; issue
// 34 item 8): the trainer's batches (MicroBatchSamples on a data set in GPU
// memory) are queued and return before the GPU has run them, the host runs
// at most two batches ahead (each further one waits, bounded, through the
// DeviceComm), and the loss and accuracy summed on the device are what the
// batches one at a time give. Before, every micro-batch ended with the host
// waiting for the batch's loss ("S" after each).
#include "runtime/device/device_zero_engine.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/runtime/device/engine_test_bed.h"
#include "tests/runtime/device/forwarding_device_comm.h"
#include "tests/runtime/device/recording_device_comm.h"

namespace ds::rt::dev {
namespace {

using namespace testing;  // the bed: Bed, Spec, Options, Data, kBatch, RecordingDeviceComm

// The samples of micro-batch m (kBatch of them, not contiguous).
std::vector<int64_t> Indices(int m) {
  std::vector<int64_t> index(kBatch);
  for (int i = 0; i < kBatch; ++i) index[i] = (int64_t(m) * kBatch + 37 * i) % Data().n;
  return index;
}

// The same samples gathered into host memory, for MicroBatch.
struct HostBatch {
  std::vector<float> x;
  std::vector<int32_t> y;
};
HostBatch Gathered(const std::vector<int64_t>& index) {
  HostBatch b;
  for (int64_t i : index) {
    b.x.insert(b.x.end(), Data().sample(i), Data().sample(i) + Data().features);
    b.y.push_back(Data().y[i]);
  }
  return b;
}

TEST_CASE_METHOD(Bed, "device engine: the trainer's micro-batches queue without a host wait, the loss read once",
                 "[gpu]") {
  std::unique_ptr<DeviceComm> solo = MakeSoloDeviceComm();
  RecordingDeviceComm recording(*solo);
  for (int stage : {0, 3}) {
    CAPTURE(stage);
    const Spec spec{stage, Precision::kFp32, 4, 0, OptimizerType::kAdam};
    OptimizerConfig oc;
    auto opt = MakeOptimizer(oc);
    DeviceZeroEngine queued(model, recording, *opt, Options(spec), false);
    DeviceZeroEngine one_by_one(model, *solo, *opt, Options(spec), false);
    queued.InitParams(7);
    one_by_one.InitParams(7);
    BatchStats want;
    for (int step = 0; step < 3; ++step) {
      if (step == 1) recording.calls.clear();  // the first batch copies the data set and sizes the scratch
      for (int m = 0; m < spec.gas; ++m) {
        const std::vector<int64_t> index = Indices(step * spec.gas + m);
        const bool last = m == spec.gas - 1;
        queued.MicroBatchSamples(Data(), index.data(), kBatch, kBatch * spec.gas, last);
        const HostBatch b = Gathered(index);
        want += one_by_one.MicroBatch(b.x.data(), b.y.data(), kBatch, kBatch * spec.gas, last);
      }
      queued.Step(1e-2f);
      one_by_one.Step(1e-2f);
    }
    // Steps 2 and 3: no host wait but the bound's ("W": the batch two
    // before is done), never one for a batch's loss ("S").
    for (const std::string& call : recording.calls) CHECK(call != "S");
    CHECK(std::count(recording.calls.begin(), recording.calls.end(), "W") == 2 * spec.gas);
    recording.calls.clear();
    const BatchStats got = queued.TakeTrainStats();
    CHECK(recording.calls == std::vector<std::string>{"S"});
    CHECK(got.count == want.count);
    CHECK(got.correct == want.correct);
    CHECK(got.loss_sum == Approx(want.loss_sum).epsilon(1e-12));
    const BatchStats again = queued.TakeTrainStats();  // taken: nothing left, and no wait for it
    CHECK(again.count == 0);
    CHECK(again.loss_sum == 0);
  }
}

// Holds a stream at a point until opened: a host function queued there
// (cudaLaunchHostFunc) that blocks until Open, or until a watchdog opens
// it after 60 s so that a host wait behind it ends the test with a failure
// instead of a hang.
class StreamGate {
 public:
  void Close(cudaStream_t s) { DS_CUDA(cudaLaunchHostFunc(s, &StreamGate::Hold, this)); }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool opened_by_watchdog() {
    std::lock_guard<std::mutex> lock(mu_);
    return by_watchdog_;
  }
  ~StreamGate() {
    Open();
    watchdog_.join();
  }

 private:
  static void CUDART_CB Hold(void* self) {
    auto* g = static_cast<StreamGate*>(self);
    std::unique_lock<std::mutex> lock(g->mu_);
    g->cv_.wait(lock, [g] { return g->open_; });
  }
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::seconds(60), [this] { return open_; })) return;
    by_watchdog_ = open_ = true;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false, by_watchdog_ = false;
  std::thread watchdog_{[this] { Watch(); }};
};

// A DeviceComm whose next Join also closes a gate on the joining stream
// (the engine joins its compute stream at the start of each micro-batch).
class GatingDeviceComm final : public ForwardingDeviceComm {
 public:
  GatingDeviceComm(DeviceComm& inner, StreamGate& gate) : ForwardingDeviceComm(inner), gate_(gate) {}
  bool armed = false;

  void Join(cudaStream_t s) override {
    if (armed) gate_.Close(s);
    armed = false;
    ForwardingDeviceComm::Join(s);
  }

 private:
  StreamGate& gate_;
};

// The GPU is held before the first of two micro-batches; both calls must
// return while it is still held. Before, the first call waited for its loss
// behind the gate (here: until the watchdog opened it). Not under
// compute-sanitizer, which may serialize launches behind the held stream.
TEST_CASE_METHOD(Bed, "device engine: two micro-batches are queued while the GPU is held", "[gpu][unsanitized]") {
  std::unique_ptr<DeviceComm> solo = MakeSoloDeviceComm();
  StreamGate gate;
  GatingDeviceComm gating(*solo, gate);
  const Spec spec{2, Precision::kBf16, 2, 0, OptimizerType::kAdam};
  OptimizerConfig oc;
  auto opt = MakeOptimizer(oc);
  DeviceZeroEngine gpu(model, gating, *opt, Options(spec), false);
  gpu.InitParams(7);
  std::vector<int64_t> index = Indices(0);
  gpu.MicroBatchSamples(Data(), index.data(), kBatch, 2 * kBatch, false);  // resident, sized
  gpu.MicroBatchSamples(Data(), index.data(), kBatch, 2 * kBatch, true);
  gpu.Step(1e-2f);
  gpu.TakeTrainStats();
  gating.armed = true;
  index = Indices(1);
  gpu.MicroBatchSamples(Data(), index.data(), kBatch, 2 * kBatch, false);
  index = Indices(2);
  gpu.MicroBatchSamples(Data(), index.data(), kBatch, 2 * kBatch, true);
  CHECK_FALSE(gate.opened_by_watchdog());
  gate.Open();
  gpu.Step(1e-2f);
  const BatchStats st = gpu.TakeTrainStats();
  CHECK(st.count == 2 * kBatch);
  CHECK(st.loss_sum > 0);
}

}  // namespace
}  // namespace ds::rt::dev
