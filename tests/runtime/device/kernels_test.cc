// The device kernels against the CPU path's math (gpu label): every op in
// every storage format, on odd sizes, compared with the same elementwise.h
// functions run on the host, or with Optimizer::Step and SumOfSquares.
#include "runtime/device/kernels.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/device/check.h"
#include "runtime/model/optimizer.h"
#include "tests/runtime/device/device_test_util.h"

namespace ds::rt::dev {
namespace {

using testing::Download;
using testing::FirstMismatch;
using testing::Get;
using testing::Put;
using testing::Quantized;
using testing::Random;
using testing::Tolerance;
using testing::Upload;

const Precision kFormats[] = {Precision::kFp32, Precision::kFp16, Precision::kBf16};

float Act(Activation act, float v) { return act == Activation::kGelu ? ew::Gelu(v) : ew::Relu(v); }

TEST_CASE("device: casts and 16-bit accumulation round bit for bit as the CPU", "[gpu]") {
  std::vector<float> v = Random(4099, 1, -70000, 70000);
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-7f, -3e-6f, 65519.f, 65520.f})
    v.push_back(special);
  for (Precision to : {Precision::kFp16, Precision::kBf16}) {
    CAPTURE(PrecisionName(to));
    testing::Stored in = Put(v, Precision::kFp32), out = Put(std::vector<float>(v.size()), to);
    Cast(in.data(), Precision::kFp32, out.data(), to, v.size(), nullptr);
    std::vector<uint16_t> want(v.size());
    ToHalf16(v.data(), want.data(), v.size(), to);
    std::vector<uint8_t> raw = Download(out.bytes);
    CHECK(std::memcmp(raw.data(), want.data(), raw.size()) == 0);
    // And back: exact.
    testing::Stored back = Put(std::vector<float>(v.size()), Precision::kFp32);
    Cast(out.data(), to, back.data(), Precision::kFp32, v.size(), nullptr);
    std::vector<float> want_back(v.size());
    FromHalf16(want.data(), want_back.data(), v.size(), to);
    std::vector<float> got_back = Get(back);
    CHECK(std::memcmp(got_back.data(), want_back.data(), v.size() * 4) == 0);
    // dst16 += src32, rounded once.
    const std::vector<float> dst = Quantized(Random(1000, 2), to), src = Random(1000, 3);
    testing::Stored d = Put(dst, to), s = Put(src, Precision::kFp32);
    Accumulate(d.data(), to, s.data(), Precision::kFp32, dst.size(), nullptr);
    std::vector<float> want_sum(dst.size());
    for (size_t i = 0; i < dst.size(); ++i) want_sum[i] = dst[i] + src[i];
    CHECK(Get(d) == Quantized(want_sum, to));
  }
}

TEST_CASE("device: bias + activation and the activation's backward, every format", "[gpu]") {
  const int rows = 37, cols = 129;
  for (Precision fmt : kFormats) {
    for (Activation act : {Activation::kRelu, Activation::kGelu}) {
      CAPTURE(PrecisionName(fmt), act == Activation::kGelu);
      const std::vector<float> z = Quantized(Random(rows * cols, 4), fmt), b = Quantized(Random(cols, 5), fmt);
      testing::Stored dz = Put(z, fmt), db = Put(b, fmt), da = Put(std::vector<float>(z.size()), fmt);
      BiasActivation(dz.data(), db.data(), rows, cols, fmt, act, da.data(), nullptr);
      std::vector<float> want_z(z.size()), want_a(z.size());
      for (size_t i = 0; i < z.size(); ++i) {
        want_z[i] = z[i] + b[i % cols];
        Quantize(&want_z[i], 1, fmt);
        want_a[i] = Act(act, want_z[i]);
      }
      CHECK(FirstMismatch(Get(dz), want_z, Tolerance(fmt)) == -1);
      CHECK(FirstMismatch(Get(da), Quantized(want_a, fmt), Tolerance(fmt)) == -1);

      // Backward: dx *= act'(saved), saved = z (GELU) or a (ReLU).
      const std::vector<float> d = Quantized(Random(z.size(), 6), fmt);
      const std::vector<float> saved = act == Activation::kGelu ? want_z : Quantized(want_a, fmt);
      testing::Stored dd = Put(d, fmt), ds = Put(saved, fmt);
      ActivationBackward(dd.data(), ds.data(), d.size(), fmt, act, nullptr);
      std::vector<float> want_d(d.size());
      for (size_t i = 0; i < d.size(); ++i)
        want_d[i] = act == Activation::kGelu ? d[i] * ew::GeluGrad(saved[i]) : ew::ReluBackward(saved[i], d[i]);
      CHECK(FirstMismatch(Get(dd), Quantized(want_d, fmt), Tolerance(fmt)) == -1);
    }
  }
  // No activation (the last layer): z only.
  std::vector<float> z = Random(10, 7), b = Random(5, 8);
  testing::Stored dz = Put(z, Precision::kFp32), db = Put(b, Precision::kFp32);
  BiasActivation(dz.data(), db.data(), 2, 5, Precision::kFp32, Activation::kRelu, nullptr, nullptr);
  std::vector<float> got = Get(dz);
  CHECK(got[7] == z[7] + b[2]);
}

TEST_CASE("device: bias gradient, column sums, assigned and accumulated", "[gpu]") {
  const int rows = 1001, cols = 77;
  for (Precision fmt : kFormats) {
    CAPTURE(PrecisionName(fmt));
    const std::vector<float> dz = Quantized(Random(static_cast<size_t>(rows) * cols, 9), fmt);
    const std::vector<float> prior = Quantized(Random(cols, 10), fmt);
    for (bool accumulate : {false, true}) {
      testing::Stored d = Put(dz, fmt), db = Put(prior, fmt);
      BiasGrad(d.data(), rows, cols, fmt, db.data(), accumulate, nullptr);
      std::vector<float> want(cols);
      for (int c = 0; c < cols; ++c) {
        double s = accumulate ? prior[c] : 0;
        for (int r = 0; r < rows; ++r) s += dz[static_cast<size_t>(r) * cols + c];
        want[c] = static_cast<float>(s);
      }
      // Sums of 1001 terms: fp32 accumulation error on top of the format's,
      // relative to the O(1) terms where a column cancels to near 0.
      CHECK(FirstMismatch(Get(db), Quantized(want, fmt), Tolerance(fmt) + 1e-4, Tolerance(fmt) + 1e-4) == -1);
    }
  }
}

TEST_CASE("device: softmax cross-entropy per row, loss and accuracy sums, bad labels", "[gpu]") {
  for (int C : {10, 1000}) {
    CAPTURE(C);
    const int rows = 333;
    const std::vector<float> logits = Random(static_cast<size_t>(rows) * C, 11, -8, 8);
    std::vector<int32_t> labels(rows);
    for (int r = 0; r < rows; ++r) labels[r] = (r * 7) % C;
    DeviceBuffer<float> dl = Upload(logits), dd(logits.size());
    DeviceBuffer<int32_t> dy = Upload(labels);
    DeviceBuffer<double> loss = Upload(std::vector<double>{0});
    DeviceBuffer<unsigned long long> correct = Upload(std::vector<unsigned long long>{0});
    DeviceBuffer<int> bad = Upload(std::vector<int>{0});
    DeviceBuffer<double> row_loss(rows);
    SoftmaxXent(dl.data(), dy.data(), rows, C, 0.5f, dd.data(), row_loss.data(), loss.data(), correct.data(),
                bad.data(), false, nullptr);
    double want_loss = 0;
    long want_correct = 0;
    std::vector<float> want_d(logits.size());
    for (int r = 0; r < rows; ++r) {
      bool ok = false;
      want_loss += ew::SoftmaxXent(&logits[static_cast<size_t>(r) * C], C, labels[r], 0.5f,
                                   &want_d[static_cast<size_t>(r) * C], &ok);
      want_correct += ok;
    }
    CHECK(Download(loss)[0] == Approx(want_loss).epsilon(1e-9));
    CHECK(static_cast<long>(Download(correct)[0]) == want_correct);
    CHECK(Download(bad)[0] == 0);
    CHECK(FirstMismatch(Download(dd), want_d, 1e-6) == -1);
  }
  // A label out of range is reported, not read past the row.
  DeviceBuffer<float> dl = Upload(std::vector<float>{1, 2, 3});
  DeviceBuffer<int32_t> dy = Upload(std::vector<int32_t>{3});
  DeviceBuffer<double> loss = Upload(std::vector<double>{0});
  DeviceBuffer<unsigned long long> correct = Upload(std::vector<unsigned long long>{0});
  DeviceBuffer<int> bad = Upload(std::vector<int>{0});
  DeviceBuffer<double> row_loss(1);
  SoftmaxXent(dl.data(), dy.data(), 1, 3, 1.0f, nullptr, row_loss.data(), loss.data(), correct.data(), bad.data(),
              false, nullptr);
  CHECK(Download(bad)[0] == 1);
  CHECK(Download(loss)[0] == 0);
}

// The documented order (kernels.h kSumLanes) on the host.
double FixedOrderSum(const std::vector<double>& v) {
  std::vector<double> lane(kSumLanes, 0.0);
  for (size_t i = 0; i < v.size(); ++i) lane[i % kSumLanes] += v[i];
  for (int w = kSumLanes / 2; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) lane[i] += lane[i + w];
  return lane[0];
}

// Before issue 34 the rows' losses were added with atomicAdd(double), in
// whatever order the threads arrived: not these bits, and not the same bits
// from one run to the next.
TEST_CASE("device: the loss sum is the rows' losses added in the documented fixed order, bit for bit", "[gpu]") {
  const int rows = 100003, C = 10;
  const std::vector<float> logits = Random(static_cast<size_t>(rows) * C, 5, -8, 8);
  std::vector<int32_t> labels(rows);
  for (int r = 0; r < rows; ++r) labels[r] = (r * 3) % C;
  DeviceBuffer<float> dl = Upload(logits);
  DeviceBuffer<int32_t> dy = Upload(labels);
  DeviceBuffer<double> row_loss(rows), loss(1);
  DeviceBuffer<unsigned long long> correct(1);
  DeviceBuffer<int> bad = Upload(std::vector<int>{0});
  double first = 0;
  for (int run = 0; run < 3; ++run) {
    DS_CUDA(cudaMemset(correct.data(), 0, sizeof(unsigned long long)));
    DS_CUDA(cudaDeviceSynchronize());
    SoftmaxXent(dl.data(), dy.data(), rows, C, 1.0f, nullptr, row_loss.data(), loss.data(), correct.data(),
                bad.data(), false, nullptr);
    const double got = Download(loss)[0];
    CHECK(got == FixedOrderSum(Download(row_loss)));
    if (run == 0) first = got;
    CHECK(got == first);
  }
  // With `add` (the trainer's batches summed on the device until it reads
  // them), the batch's fixed-order sum is added to what is there.
  SoftmaxXent(dl.data(), dy.data(), rows, C, 1.0f, nullptr, row_loss.data(), loss.data(), correct.data(),
              bad.data(), true, nullptr);
  CHECK(Download(loss)[0] == first + first);
}

// Two segments with a gap between them in the gradients and the compute
// copy (ZeRO-1's layout: the owned pieces of two layers), the master weights
// in the shard like the states, or (`aliased`: fp32, where the master is the
// compute copy) at the segments' flat offsets.
struct Layout {
  explicit Layout(bool aliased = false)
      : segs{{aliased ? 3u : 0u, 0, 3, 3, 700}, {aliased ? 1000u : 700u, 700, 1000, 1000, 333}},
        masters(aliased ? 1333 : 1033) {}
  std::vector<UpdateSegment> segs;
  size_t masters;
  size_t shard() const { return 1033; }
  size_t flat() const { return 1333; }
};

TEST_CASE("device: the multi-tensor optimizer step equals Optimizer::Step, every optimizer and format", "[gpu]") {
  const bool aliased = GENERATE(false, true);
  CAPTURE(aliased);
  const Layout lay(aliased);
  DeviceBuffer<UpdateSegment> segs = Upload(lay.segs);
  OptimizerConfig sgd, nesterov, adam, adamw;
  sgd.type = OptimizerType::kSgd;
  sgd.weight_decay = 0.01;
  nesterov = sgd;
  nesterov.momentum = 0.9;
  nesterov.nesterov = true;
  adam.type = OptimizerType::kAdam;
  adam.adam_w_mode = false;
  adam.weight_decay = 0.01;
  adamw.type = OptimizerType::kAdamW;
  adamw.weight_decay = 0.1;
  for (const OptimizerConfig& c : {sgd, nesterov, adam, adamw}) {
    const auto opt = MakeOptimizer(c);
    for (Precision gfmt : kFormats) {
      CAPTURE(static_cast<int>(c.type), c.momentum, PrecisionName(gfmt));
      std::vector<float> master = Random(lay.masters, 12), s0(lay.shard()), s1(lay.shard());
      const std::vector<float> grads = Quantized(Random(lay.flat(), 13), gfmt);
      DeviceBuffer<float> dm = Upload(master), d0 = Upload(s0), d1 = Upload(s1);
      testing::Stored dg = Put(grads, gfmt), dc = Put(std::vector<float>(lay.flat()), Precision::kBf16);
      for (int64_t step = 1; step <= 3; ++step) {
        const float lr = 0.01f * step, gscale = 0.25f;
        OptimizerUpdate(opt->Plan(step, lr, gscale), segs.data(), 2, 700, dm.data(), d0.data(), d1.data(),
                        dg.data(), gfmt, dc.data(), Precision::kBf16, nullptr);
        for (const UpdateSegment& s : lay.segs) {
          float* st[2] = {s0.data() + s.state, s1.data() + s.state};
          opt->Step(master.data() + s.master, grads.data() + s.grad, st, s.len, step, lr, gscale);
        }
      }
      CHECK(FirstMismatch(Download(dm), master, 1e-5) == -1);
      if (opt->state_slots() > 0) CHECK(FirstMismatch(Download(d0), s0, 1e-5) == -1);
      if (opt->state_slots() > 1) CHECK(FirstMismatch(Download(d1), s1, 1e-5) == -1);
      // The bf16 copy holds the new weights in the segments, zeros in the gap.
      std::vector<float> compute = Get(dc), want(lay.flat(), 0.0f);
      for (const UpdateSegment& s : lay.segs)
        for (size_t i = 0; i < s.len; ++i) want[s.compute + i] = master[s.master + i];
      CHECK(FirstMismatch(compute, Quantized(want, Precision::kBf16), Tolerance(Precision::kBf16)) == -1);
    }
  }
}

TEST_CASE("device: gradient sum of squares over segments, deterministic, inf and NaN make it non-finite", "[gpu]") {
  const Layout lay;
  DeviceBuffer<UpdateSegment> segs = Upload(lay.segs);
  DeviceBuffer<double> scratch(NormScratchSize(2)), out(1);
  for (Precision fmt : kFormats) {
    CAPTURE(PrecisionName(fmt));
    std::vector<float> g = Quantized(Random(lay.flat(), 14), fmt);
    testing::Stored dg = Put(g, fmt);
    GradSumOfSquares(segs.data(), 2, dg.data(), fmt, scratch.data(), out.data(), nullptr);
    const double first = Download(out)[0];
    const double want = SumOfSquares(g.data() + 3, 700) + SumOfSquares(g.data() + 1000, 333);
    CHECK(first == Approx(want).epsilon(1e-12));
    GradSumOfSquares(segs.data(), 2, dg.data(), fmt, scratch.data(), out.data(), nullptr);
    CHECK(Download(out)[0] == first);  // bit for bit: a fixed order
    for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      g[1100] = bad;
      testing::Stored db = Put(g, fmt);
      GradSumOfSquares(segs.data(), 2, db.data(), fmt, scratch.data(), out.data(), nullptr);
      CHECK_FALSE(std::isfinite(Download(out)[0]));
    }
    // In the gap between the segments: not counted.
    g[1100] = 0;
    g[800] = std::numeric_limits<float>::infinity();
    testing::Stored dgap = Put(g, fmt);
    GradSumOfSquares(segs.data(), 2, dgap.data(), fmt, scratch.data(), out.data(), nullptr);
    CHECK(std::isfinite(Download(out)[0]));
  }
}

// The launch grid is clamped at 2^16 blocks of 256 threads (kernels.cu,
// Blocks): 2^24 threads. With n = 2^24 + 3 every elementwise kernel's
// grid-stride loop takes a second pass for the last 3 elements, with a
// 64-bit index. A kernel that sized its grid without the clamp, stopped
// after one pass, or used a 32-bit stride would leave those 3 elements (or
// others) unwritten or write past n; the sentinel after n catches the
// latter. Each op is compared with the CPU's bit for bit over all n.
// The first index where a and b differ (bit for bit; NaN only as NaN), or
// -1: a failure names one element instead of printing 2^24 of them.
long FirstDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return static_cast<long>(std::min(a.size(), b.size()));
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<long>(i);
  return -1;
}

TEST_CASE("device: elementwise kernels at n = 2^24 + 3 (the grid clamp and the loop's second pass)", "[gpu]") {
  const size_t n = (size_t{1} << 24) + 3;
  const float kSentinel = 12288.0f;  // exact in every format
  std::vector<float> x = Random(n, 40);
  x.push_back(kSentinel);  // x[n]: never touched by an op over n elements
  const std::vector<float> y = Random(n + 1, 41);

  SECTION("Scale") {
    DeviceBuffer<float> d = Upload(x);
    Scale(d.data(), -0.5f, n, nullptr);
    std::vector<float> got = Download(d), want = x;
    for (size_t i = 0; i < n; ++i) want[i] = x[i] * -0.5f;
    CHECK(got[n] == kSentinel);
    for (size_t i = n - 3; i < n; ++i) CHECK(got[i] == want[i]);  // the second pass
    CHECK(FirstDifference(got, want) == -1);
  }
  SECTION("Cast fp32 -> bf16 and back") {
    testing::Stored in = Put(x, Precision::kFp32), out = Put(std::vector<float>(n + 1, kSentinel), Precision::kBf16);
    Cast(in.data(), Precision::kFp32, out.data(), Precision::kBf16, n, nullptr);
    std::vector<float> got = Get(out), want = Quantized(x, Precision::kBf16);
    CHECK(got[n] == kSentinel);
    want[n] = kSentinel;
    for (size_t i = n - 3; i < n; ++i) CHECK(got[i] == want[i]);
    CHECK(FirstDifference(got, want) == -1);
  }
  SECTION("Accumulate fp16 += fp32") {
    const std::vector<float> dst = Quantized(x, Precision::kFp16);
    testing::Stored d = Put(dst, Precision::kFp16), s = Put(y, Precision::kFp32);
    Accumulate(d.data(), Precision::kFp16, s.data(), Precision::kFp32, n, nullptr);
    std::vector<float> want(n + 1);
    for (size_t i = 0; i < n; ++i) want[i] = dst[i] + y[i];
    want = Quantized(want, Precision::kFp16);
    want[n] = dst[n];
    std::vector<float> got = Get(d);
    for (size_t i = n - 3; i <= n; ++i) CHECK(got[i] == want[i]);
    CHECK(FirstDifference(got, want) == -1);
  }
  SECTION("ReLU backward, bf16") {
    const std::vector<float> d = Quantized(x, Precision::kBf16), a = Quantized(y, Precision::kBf16);
    testing::Stored dd = Put(d, Precision::kBf16), da = Put(a, Precision::kBf16);
    ActivationBackward(dd.data(), da.data(), n, Precision::kBf16, Activation::kRelu, nullptr);
    std::vector<float> want(n + 1);
    for (size_t i = 0; i < n; ++i) want[i] = ew::ReluBackward(a[i], d[i]);
    want[n] = d[n];
    std::vector<float> got = Get(dd);
    for (size_t i = n - 3; i <= n; ++i) CHECK(got[i] == want[i]);
    CHECK(FirstDifference(got, want) == -1);
  }
}

TEST_CASE("device: a failed CUDA call throws with file:line, the call and CUDA's message", "[gpu][unsanitized]") {
  void* p = nullptr;
  try {
    DS_CUDA(cudaMalloc(&p, size_t{1} << 62));
    FAIL("a 4 EiB cudaMalloc succeeded");
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    CHECK(what.find("kernels_test.cc:") != std::string::npos);
    CHECK(what.find("cudaMalloc(&p, size_t{1} << 62)") != std::string::npos);
    CHECK(what.find("cudaErrorMemoryAllocation") != std::string::npos);
  }
  cudaGetLastError();
}

}  // namespace
}  // namespace ds::rt::dev
