#include "runtime/blas.h"

#include <cblas.h>

#include <algorithm>
#include <thread>

#include "common/env_registry.h"

namespace ds::rt {

int ConfigureBlasThreads(int threads) {
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
