// DeviceMlp against the CPU Mlp (gpu label): the same parameters and batch
// give the same loss, accuracy and gradients (fp32 exactly up to summation
// order; fp16/bf16 within their rounding), for ReLU and GELU, with gradient
// accumulation into the sink's buffer; the order in which it acquires,
// prefetches and releases parameters and hands over gradients.
#include "runtime/device/device_mlp.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/device/kernels.h"
#include "tests/runtime/device/device_test_util.h"

namespace ds::rt::dev {
namespace {

using testing::Get;
using testing::Put;
using testing::Random;

// Full parameters on the device; the whole model's gradient in one buffer.
struct Params : DeviceParamSource, DeviceGradSink {
  Params(const Mlp& m, const std::vector<float>& p, Precision fmt)
      : model(m), params(Put(p, fmt)), grads(Put(std::vector<float>(p.size()), fmt)), esize(ElementSize(fmt)) {}
  const void* Acquire(int l) override {
    ++acquired;
    calls.push_back("A" + std::to_string(l));
    return static_cast<const uint8_t*>(params.data()) + model.layer(l).offset * esize;
  }
  void Release(int l) override {
    ++released;
    calls.push_back("R" + std::to_string(l));
  }
  void Prefetch(int l) override { calls.push_back("P" + std::to_string(l)); }
  Target GradTarget(int l) override {
    return {static_cast<uint8_t*>(grads.data()) + model.layer(l).offset * esize, accumulate};
  }
  void LayerGrad(int l) override {
    order.push_back(l);
    calls.push_back("G" + std::to_string(l));
  }

  const Mlp& model;
  testing::Stored params, grads;
  size_t esize;
  bool accumulate = false;
  int acquired = 0, released = 0;
  std::vector<int> order;
  std::vector<std::string> calls;  // A(cquire), R(elease), P(refetch), G(radient) with the layer
};

// The CPU side: the same parameters, the gradient summed over calls.
struct CpuParams : ParamSource, GradSink {
  CpuParams(const Mlp& m, std::vector<float> p) : model(m), params(std::move(p)), grads(params.size()) {}
  const float* Acquire(int l) override { return params.data() + model.layer(l).offset; }
  void Release(int) override {}
  void LayerGrad(int l, const float* g, size_t n) override {
    for (size_t i = 0; i < n; ++i) grads[model.layer(l).offset + i] += g[i];
  }
  const Mlp& model;
  std::vector<float> params, grads;
};

// ||a - b|| / ||b||
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST_CASE("device MLP: loss, accuracy and gradients equal the CPU model's", "[gpu]") {
  Stream stream;
  for (Activation act : {Activation::kRelu, Activation::kGelu}) {
    for (Precision fmt : {Precision::kFp32, Precision::kFp16, Precision::kBf16}) {
      CAPTURE(act == Activation::kGelu, PrecisionName(fmt));
      MlpConfig config;
      config.sizes = {37, 64, 48, 10};
      config.activation = act;
      Mlp cpu(config);
      std::vector<float> p(cpu.num_params());
      cpu.Init(p.data(), 7);
      Quantize(p.data(), p.size(), fmt);  // both compute with what fmt stores
      const int batch = 50;
      const std::vector<float> x = testing::Quantized(Random(static_cast<size_t>(batch) * 37, 8), fmt);
      std::vector<int32_t> y(batch);
      for (int i = 0; i < batch; ++i) y[i] = (i * 3) % 10;

      DeviceMlp gpu(cpu, fmt, stream.get(), false);
      Params dp(cpu, p, fmt);
      CpuParams cp(cpu, p);
      const float scale = 1.0f / batch;
      const BatchStats want = cpu.ForwardBackward(cp, x.data(), y.data(), batch, scale, cp);
      const BatchStats got = gpu.ForwardBackward(dp, x.data(), y.data(), batch, scale, dp);
      const double tol = fmt == Precision::kFp32 ? 1e-5 : fmt == Precision::kFp16 ? 5e-3 : 4e-2;
      CHECK(got.count == batch);
      CHECK(got.loss_sum == Approx(want.loss_sum).epsilon(tol));
      if (fmt == Precision::kFp32) CHECK(got.correct == want.correct);
      CHECK(RelativeError(Get(dp.grads), cp.grads) < tol * 5);
      CHECK(dp.order == std::vector<int>{2, 1, 0});
      CHECK(dp.acquired == dp.released);
      // Each layer's successor is announced before the layer's products are
      // queued, backward's next layer before this one's gradient is handed
      // over, and the last layer is acquired once for forward and backward
      // (issue 34 item 8: ZeRO-3 gathers it once and overlaps the others).
      const std::vector<std::string> calls{"A0", "P1", "R0", "A1", "P2", "R1", "A2",        // forward
                                           "P1", "G2", "R2", "G1", "A1", "R1", "G0"};  // backward
      CHECK(dp.calls == calls);

      // A second micro-batch adds into the sink's buffer.
      dp.accumulate = true;
      cpu.ForwardBackward(cp, x.data(), y.data(), batch, scale, cp);
      gpu.ForwardBackward(dp, x.data(), y.data(), batch, scale, dp);
      CHECK(RelativeError(Get(dp.grads), cp.grads) < tol * 5);

      const BatchStats eval = gpu.Evaluate(dp, x.data(), y.data(), batch);
      CHECK(eval.loss_sum == Approx(want.loss_sum).epsilon(tol));
    }
  }
}

}  // namespace
}  // namespace ds::rt::dev
