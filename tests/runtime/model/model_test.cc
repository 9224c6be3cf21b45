// Mlp: gradients against an fp64 reference implementation (itself checked
// against central finite differences), init, layout and the ZeRO-3 protocol
// of Acquire/Release/LayerGrad.
#include "runtime/model/model.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "runtime/model/blas.h"
#include "runtime/numeric/rng.h"

using namespace ds::rt;

namespace {

struct VectorSource : ParamSource {
  const float* p;
  const Mlp& m;
  std::vector<int> log;  // +l acquire, -(l+1) release
  int held = 0;
  VectorSource(const float* params, const Mlp& model) : p(params), m(model) {}
  const float* Acquire(int l) override {
    log.push_back(l);
    ++held;
    return p + m.layer(l).offset;
  }
  void Release(int l) override {
    log.push_back(-(l + 1));
    --held;
  }
};

struct VectorSink : GradSink {
  std::vector<float> g;
  std::vector<int> order;
  const Mlp& m;
  explicit VectorSink(const Mlp& model) : g(model.num_params(), 0.0f), m(model) {}
  void LayerGrad(int l, const float* grad, size_t n) override {
    REQUIRE(n == m.layer(l).size());
    order.push_back(l);
    for (size_t i = 0; i < n; ++i) g[m.layer(l).offset + i] += grad[i];
  }
};

double GeluD(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// fp64 reference: sum of cross-entropy over the batch.
double RefLoss(const MlpConfig& c, const std::vector<double>& p, const std::vector<double>& x,
               const std::vector<int32_t>& y, int batch) {
  double loss = 0;
  for (int r = 0; r < batch; ++r) {
    std::vector<double> a(x.begin() + r * c.sizes[0], x.begin() + (r + 1) * c.sizes[0]);
    size_t off = 0;
    for (size_t l = 0; l + 1 < c.sizes.size(); ++l) {
      const int in = c.sizes[l], out = c.sizes[l + 1];
      std::vector<double> z(out);
      for (int o = 0; o < out; ++o) {
        double s = p[off + static_cast<size_t>(in) * out + o];
        for (int i = 0; i < in; ++i) s += p[off + static_cast<size_t>(o) * in + i] * a[i];
        z[o] = s;
      }
      off += static_cast<size_t>(in) * out + out;
      if (l + 2 < c.sizes.size()) {
        for (double& v : z) v = c.activation == Activation::kGelu ? GeluD(v) : (v > 0 ? v : 0);
      }
      a = z;
    }
    double mx = a[0];
    for (double v : a) mx = std::max(mx, v);
    double s = 0;
    for (double v : a) s += std::exp(v - mx);
    loss += std::log(s) + mx - a[y[r]];
  }
  return loss;
}

std::vector<double> RefGrad(const MlpConfig& c, std::vector<double> p, const std::vector<double>& x,
                            const std::vector<int32_t>& y, int batch) {
  std::vector<double> g(p.size());
  const double h = 1e-6;
  for (size_t i = 0; i < p.size(); ++i) {
    const double keep = p[i];
    p[i] = keep + h;
    const double up = RefLoss(c, p, x, y, batch);
    p[i] = keep - h;
    const double down = RefLoss(c, p, x, y, batch);
    p[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

void CheckGradients(Activation act) {
  MlpConfig c;
  c.sizes = {7, 6, 5, 4};
  c.activation = act;
  Mlp m(c);
  std::vector<float> p(m.num_params());
  m.Init(p.data(), 3);
  const int batch = 5;
  Rng rng(9);
  std::vector<float> x(batch * 7);
  for (float& v : x) v = static_cast<float>(rng.Normal());
  std::vector<int32_t> y = {0, 3, 2, 1, 3};

  VectorSource src(p.data(), m);
  VectorSink sink(m);
  const float scale = 0.25f;
  BatchStats st = m.ForwardBackward(src, x.data(), y.data(), batch, scale, sink);

  std::vector<double> pd(p.begin(), p.end()), xd(x.begin(), x.end());
  const double ref_loss = RefLoss(c, pd, xd, y, batch);
  CHECK(st.loss_sum == Approx(ref_loss).epsilon(1e-5));
  CHECK(st.count == batch);
  const std::vector<double> ref = RefGrad(c, pd, xd, y, batch);
  for (size_t i = 0; i < ref.size(); ++i) {
    INFO("param " << i);
    CHECK(sink.g[i] == Approx(scale * ref[i]).margin(2e-5).epsilon(1e-3));
  }
}

}  // namespace

TEST_CASE("Mlp gradients match finite differences (ReLU)") { CheckGradients(Activation::kRelu); }
TEST_CASE("Mlp gradients match finite differences (GELU, erf form)") {
  CheckGradients(Activation::kGelu);
}

TEST_CASE("Mlp layout, init bounds and determinism") {
  Mlp m(MlpConfig{});  // 784-512-512-10
  REQUIRE(m.num_layers() == 3);
  CHECK(m.num_params() == 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10);
  CHECK(m.layer(1).offset == 784 * 512 + 512);
  CHECK(m.layer(2).in == 512);
  CHECK(m.layer(2).out == 10);
  std::vector<float> a(m.num_params()), b(m.num_params()), c(m.num_params());
  m.Init(a.data(), 42);
  m.Init(b.data(), 42);
  m.Init(c.data(), 43);
  CHECK(a == b);
  CHECK(a != c);
  for (int l = 0; l < 3; ++l) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(m.layer(l).in));
    float mx = 0;
    for (size_t i = 0; i < m.layer(l).size(); ++i) mx = std::max(mx, std::fabs(a[m.layer(l).offset + i]));
    CHECK(mx <= bound);
    CHECK(mx > 0.95f * bound);  // the range is used
  }
  // 2 * (fwd + dW) for all layers + 2 * dX for layers 1 and 2.
  CHECK(m.FlopsPerSample() == 2.0 * (2.0 * (784 * 512 + 512 * 512 + 512 * 10) + 512 * 512 + 512 * 10));
}

TEST_CASE("Mlp acquires each layer around its use and hands gradients last layer first") {
  MlpConfig c;
  c.sizes = {4, 3, 3, 2};
  Mlp m(c);
  std::vector<float> p(m.num_params());
  m.Init(p.data(), 1);
  std::vector<float> x(2 * 4, 0.5f);
  std::vector<int32_t> y = {0, 1};
  VectorSource src(p.data(), m);
  VectorSink sink(m);
  m.ForwardBackward(src, x.data(), y.data(), 2, 1.0f, sink);
  CHECK(src.held == 0);
  // Forward 0,1,2 then backward needs W for dX of layers 2 and 1 only.
  CHECK(src.log == std::vector<int>{0, -1, 1, -2, 2, -3, 2, -3, 1, -2});
  CHECK(sink.order == std::vector<int>{2, 1, 0});

  VectorSource src2(p.data(), m);
  const BatchStats e = m.Evaluate(src2, x.data(), y.data(), 2);
  VectorSource src3(p.data(), m);
  VectorSink sink3(m);
  const BatchStats fb = m.ForwardBackward(src3, x.data(), y.data(), 2, 1.0f, sink3);
  CHECK(e.loss_sum == fb.loss_sum);
  CHECK(e.correct == fb.correct);
}

TEST_CASE("softmax cross-entropy is stable for huge logits") {
  MlpConfig c;
  c.sizes = {1, 2};
  Mlp m(c);
  std::vector<float> p = {1000.0f, -1000.0f, 0.0f, 0.0f};  // W (2x1), b
  std::vector<float> x = {1.0f};
  std::vector<int32_t> y = {1};
  VectorSource src(p.data(), m);
  VectorSink sink(m);
  const BatchStats st = m.ForwardBackward(src, x.data(), y.data(), 1, 1.0f, sink);
  CHECK(st.loss_sum == Approx(2000.0));
  CHECK(st.correct == 0);
  CHECK(std::isfinite(sink.g[0]));
  CHECK(sink.g[0] == Approx(1.0f));   // p0 - 0 = 1
  CHECK(sink.g[1] == Approx(-1.0f));  // p1 - 1 = -1
}

TEST_CASE("BLAS thread count: explicit, or OMP_NUM_THREADS / cores per local rank") {
  CHECK(ConfigureBlasThreads(1) == 1);
  CHECK(BlasThreads() == 1);
  ConfigureBlasThreadsOnce();  // already configured: unchanged
  CHECK(BlasThreads() == 1);
}

TEST_CASE("a sink may have the model accumulate straight into its buffer") {
  struct AccSink : GradSink {
    std::vector<float> g;
    const Mlp& m;
    int calls = 0;
    explicit AccSink(const Mlp& model) : g(model.num_params(), 0.0f), m(model) {}
    float* AccumulateInto(int l) override { return g.data() + m.layer(l).offset; }
    void LayerGrad(int l, const float* grad, size_t n) override {
      CHECK(grad == g.data() + m.layer(l).offset);
      CHECK(n == m.layer(l).size());
      ++calls;
    }
  };
  MlpConfig c;
  c.sizes = {6, 5, 3};
  Mlp m(c);
  std::vector<float> p(m.num_params());
  m.Init(p.data(), 4);
  std::vector<float> x1(2 * 6, 0.25f), x2(2 * 6, -0.5f);
  std::vector<int32_t> y = {2, 0};
  VectorSource src(p.data(), m);
  VectorSink copy(m);  // sums the two batches itself
  m.ForwardBackward(src, x1.data(), y.data(), 2, 0.5f, copy);
  m.ForwardBackward(src, x2.data(), y.data(), 2, 0.5f, copy);
  AccSink acc(m);
  m.ForwardBackward(src, x1.data(), y.data(), 2, 0.5f, acc);
  m.ForwardBackward(src, x2.data(), y.data(), 2, 0.5f, acc);
  CHECK(acc.calls == 4);
  for (size_t i = 0; i < acc.g.size(); ++i) CHECK(acc.g[i] == Approx(copy.g[i]).margin(1e-6));
}

TEST_CASE("MeasureGemmFloor times the model's products") {
  const GemmFloor f = MeasureGemmFloor({8, 6, 4}, 3, 0.01, 2);
  CHECK(f.seconds_per_batch > 0);
  CHECK(f.gflops > 0);
  CHECK(f.samples_per_second == Approx(3 / f.seconds_per_batch));
}
