// BLAS setup for the trainer: how many threads OpenBLAS may use. A worker
// shares its node's cores with LOCAL_WORLD_SIZE - 1 others, so the default
// is OMP_NUM_THREADS (which dslaunch sets) or cores / LOCAL_WORLD_SIZE.
// Call once at startup, before any other thread uses BLAS.
#pragma once

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

}  // namespace ds::rt
