// gemm_bench: GFLOP/s of the MLP's matrix products (784-512-512-10, batch
// 64, forward and backward shapes) through OpenBLAS and, when built with it,
// oneDNN's dnnl_sgemm, to choose the library by measurement. Row-major, fp32,
// the exact transposes runtime/model.cc uses. Results: bench/results/gemm.md.
// Usage: gemm_bench [threads=1] [min_seconds_per_shape=0.3]
#include <cblas.h>
#ifdef DSLAUNCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "runtime/model/blas.h"
#include "runtime/model/model.h"
#include "runtime/model/optimizer.h"

namespace {

struct FlatSource : ds::rt::ParamSource {
  const float* p;
  const ds::rt::Mlp* m;
  const float* Acquire(int l) override { return p + m->layer(l).offset; }
  void Release(int) override {}
};

struct FlatSink : ds::rt::GradSink {
  float* g;
  const ds::rt::Mlp* m;
  // Accumulate in place, as an engine doing gradient accumulation would.
  float* AccumulateInto(int l) override { return g + m->layer(l).offset; }
  void LayerGrad(int, const float*, size_t) override {}
};

struct Shape {
  const char* what;
  bool ta, tb;  // transposes of A and B
  int m, n, k;
};

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-5 GFLOP/s, each round running for at least `min_s` seconds.
double Measure(const Shape& s, double min_s, const std::function<void()>& run) {
  for (int i = 0; i < 3; ++i) run();  // warm up (JIT, thread pool)
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    int iters = 0;
    const double t0 = Seconds();
    double t;
    do {
      run();
      ++iters;
      t = Seconds() - t0;
    } while (t < min_s / 5);
    best = std::max(best, 2.0 * s.m * s.n * s.k * iters / t / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const double min_s = argc > 2 ? std::atof(argv[2]) : 0.3;
  openblas_set_num_threads(threads);
  const int B = 64;
  const std::vector<Shape> shapes = {
      {"fwd  L1 Y=X*W^T   64x512x784", false, true, B, 512, 784},
      {"fwd  L2 Y=X*W^T   64x512x512", false, true, B, 512, 512},
      {"fwd  L3 Y=X*W^T   64x10x512", false, true, B, 10, 512},
      {"bwd  L1 dW=dY^T*X 512x784x64", true, false, 512, 784, B},
      {"bwd  L2 dW=dY^T*X 512x512x64", true, false, 512, 512, B},
      {"bwd  L3 dW=dY^T*X 10x512x64", true, false, 10, 512, B},
      {"bwd  L2 dX=dY*W   64x512x512", false, false, B, 512, 512},
      {"bwd  L3 dX=dY*W   64x512x10", false, false, B, 512, 10},
  };
  std::printf("threads=%d  (M x N x K, GFLOP/s, best of 5)\n", threads);
  std::printf("%-32s %10s %10s\n", "shape", "openblas", "onednn");
  double t_blas = 0, t_dnnl = 0, flops = 0;
  for (const Shape& s : shapes) {
    std::vector<float> a(static_cast<size_t>(s.m) * s.k, 0.01f), b(static_cast<size_t>(s.k) * s.n, 0.02f),
        c(static_cast<size_t>(s.m) * s.n);
    const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    const double gb = Measure(s, min_s, [&] {
      cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans,
                  s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    });
    double gd = 0;
#ifdef DSLAUNCH_HAVE_DNNL
    gd = Measure(s, min_s, [&] {
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda,
                 b.data(), ldb, 0.0f, c.data(), s.n);
    });
#endif
    const double f = 2.0 * s.m * s.n * s.k;
    flops += f;
    t_blas += f / (gb * 1e9);
    if (gd > 0) t_dnnl += f / (gd * 1e9);
    std::printf("%-32s %10.1f %10.1f\n", s.what, gb, gd);
  }
  std::printf("%-32s %10.1f %10.1f\n", "one training step (all above)", flops / t_blas / 1e9,
              t_dnnl > 0 ? flops / t_dnnl / 1e9 : 0.0);
  std::printf("step floor: %.1f us openblas, %.1f us onednn -> %.0f / %.0f samples/s per rank\n",
              t_blas * 1e6, t_dnnl * 1e6, B / t_blas, t_dnnl > 0 ? B / t_dnnl : 0.0);

  // The model itself: forward+backward of one micro-batch, and an Adam step.
  ds::rt::Mlp mlp(ds::rt::MlpConfig{});
  std::vector<float> params(mlp.num_params()), grads(mlp.num_params());
  std::vector<float> m1(mlp.num_params()), m2(mlp.num_params());
  mlp.Init(params.data(), 1);
  std::vector<float> x(static_cast<size_t>(B) * 784, 0.1f);
  std::vector<int32_t> y(B, 3);
  FlatSource src;
  src.p = params.data();
  src.m = &mlp;
  FlatSink sink;
  sink.g = grads.data();
  sink.m = &mlp;
  const Shape step_shape{"", false, false, 1, 1, 1};
  const double fb = Measure(step_shape, min_s, [&] {
    mlp.ForwardBackward(src, x.data(), y.data(), B, 1.0f / B, sink);
  });  // "GFLOP/s" of a 2-flop unit: calls per second * 2e-9
  const double fb_us = 2.0 / (fb * 1e9) * 1e6;
  auto adam = ds::rt::MakeOptimizer(ds::rt::OptimizerConfig{});
  float* state[] = {m1.data(), m2.data()};
  int64_t t = 0;
  const double ad = Measure(step_shape, min_s, [&] {
    adam->Step(params.data(), grads.data(), state, params.size(), ++t, 1e-6f);
  });
  const double ad_us = 2.0 / (ad * 1e9) * 1e6;
  std::printf("Mlp::ForwardBackward(batch %d): %.1f us = %.1f GFLOP/s (%.0f%% of the openblas floor)\n",
              B, fb_us, mlp.FlopsPerSample() * B / (fb_us * 1e3), 100.0 * t_blas * 1e6 / fb_us);
  std::printf("Adam step over %zu params: %.1f us\n", params.size(), ad_us);
  std::printf("compute-only bound: %.0f samples/s per rank\n", B / ((fb_us + ad_us) * 1e-6));
  const ds::rt::GemmFloor floor = ds::rt::MeasureGemmFloor(mlp.config().sizes, B, min_s);
  std::printf("MeasureGemmFloor (the library's measurement): %.1f us, %.1f GFLOP/s, %.0f samples/s\n",
              floor.seconds_per_batch * 1e6, floor.gflops, floor.samples_per_second);
  return 0;
}
