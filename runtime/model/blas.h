// BLAS setup for the trainer: how many threads OpenBLAS may use. A worker
// shares its node's cores with LOCAL_WORLD_SIZE - 1 others, so the default
// is OMP_NUM_THREADS (which dslaunch sets) or cores / LOCAL_WORLD_SIZE.
// Call once at startup, before any other thread uses BLAS.
#pragma once

#include <vector>

namespace ds::rt {

// Sets the OpenBLAS thread count: `threads` if > 0, else OMP_NUM_THREADS
// from the environment registry, else max(1, cores / LOCAL_WORLD_SIZE).
// Returns the count set.
int ConfigureBlasThreads(int threads = 0);

// Applies the default (ConfigureBlasThreads(0)) unless a thread count was
// already configured in this process. Every Mlp constructor calls it, so a
// worker never runs with one BLAS thread per core per rank by accident.
void ConfigureBlasThreadsOnce();

// The count OpenBLAS currently uses.
int BlasThreads();

// The matrix-product floor of one training micro-batch: the exact sgemm
// calls Mlp::ForwardBackward makes (forward, weight gradient, input gradient
// for layers > 0) on `batch` samples, timed alone on synthetic operands in
// the current BLAS thread setting. Best of `rounds` rounds of at least
// `seconds / rounds` each. For "fraction of the floor" in benchmarks.
struct GemmFloor {
  double seconds_per_batch = 0;  // all products of one ForwardBackward
  double gflops = 0;             // their FLOPs / seconds_per_batch
  double samples_per_second = 0; // batch / seconds_per_batch
};
GemmFloor MeasureGemmFloor(const std::vector<int>& sizes, int batch, double seconds = 1.0,
                           int rounds = 5);

}  // namespace ds::rt
