#include "runtime/blas.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
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

}  // namespace ds::rt
