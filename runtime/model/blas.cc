#include "runtime/model/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/env_registry.h"

namespace ds::rt {
namespace {
std::atomic<bool> configured{false};
}  // namespace

void ConfigureBlasThreadsOnce() {
  if (!configured.load()) ConfigureBlasThreads(0);
}

int ConfigureBlasThreads(int threads) {
  configured.store(true);
  if (threads <= 0) threads = static_cast<int>(EnvInt("OMP_NUM_THREADS"));
  if (threads <= 0) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    const int local = static_cast<int>(std::max<int64_t>(1, EnvInt("LOCAL_WORLD_SIZE")));
    threads = std::max(1, cores / local);
  }
  openblas_set_num_threads(threads);
  return threads;
}

int BlasThreads() { return openblas_get_num_threads(); }

GemmFloor MeasureGemmFloor(const std::vector<int>& sizes, int batch, double seconds, int rounds) {
  struct Call {
    CBLAS_TRANSPOSE ta, tb;
    int m, n, k;
  };
  std::vector<Call> calls;
  size_t most = 0;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const int in = sizes[l], out = sizes[l + 1];
    calls.push_back({CblasNoTrans, CblasTrans, batch, out, in});  // Y = X W^T
    calls.push_back({CblasTrans, CblasNoTrans, out, in, batch});  // dW = dY^T X
    if (l > 0) calls.push_back({CblasNoTrans, CblasNoTrans, batch, in, out});  // dX = dY W
    most = std::max(most, static_cast<size_t>(std::max(in, batch)) * std::max(out, std::max(in, batch)));
  }
  std::vector<float> a(most, 0.01f), b(most, 0.02f), c(most);
  double flops = 0;
  for (const Call& k : calls) flops += 2.0 * k.m * k.n * k.k;
  auto run = [&] {
    for (const Call& k : calls) {
      const int lda = k.ta == CblasTrans ? k.m : k.k, ldb = k.tb == CblasTrans ? k.k : k.n;
      cblas_sgemm(CblasRowMajor, k.ta, k.tb, k.m, k.n, k.k, 1.0f, a.data(), lda, b.data(), ldb,
                  0.0f, c.data(), k.n);
    }
  };
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) run();  // warm up
  double best = 1e30;
  rounds = std::max(1, rounds);
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    int iters = 0;
    double t = 0;
    do {
      run();
      ++iters;
      t = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (t < seconds / rounds);
    best = std::min(best, t / iters);
  }
  GemmFloor f;
  f.seconds_per_batch = best;
  f.gflops = flops / best / 1e9;
  f.samples_per_second = batch / best;
  return f;
}

}  // namespace ds::rt
