/* collectives_mpi: Open MPI's MPI_Allreduce, MPI_Reduce_scatter_block and
 * MPI_Allgather (float sum / float) at every size from 1 KB to max_bytes
 * (powers of 4), the same points and output as collectives_bench.cc:
 * "RESULT mpi_<what> <bytes> <median us> <calls>" from rank 0. Sizes are the
 * larger buffer (allreduce: the vector; reduce-scatter: its input; all-gather:
 * its output). bench/collectives builds it with mpicc.openmpi and runs it with
 * mpirun.openmpi -np 2, once with Open MPI's defaults (shared memory between
 * the two ranks) and once with `--mca btl self,tcp` (loopback TCP).
 * Usage: collectives_mpi [max_bytes=268435456] [seconds=0.25] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

enum { ALLREDUCE, REDUCE_SCATTER, ALL_GATHER };

static void once(int op, float* a, float* b, int n, int size) {
  if (op == ALLREDUCE) MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (op == REDUCE_SCATTER) MPI_Reduce_scatter_block(a, b, n / size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else MPI_Allgather(b, n / size, MPI_FLOAT, a, n / size, MPI_FLOAT, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (256u << 20);
  const double seconds = argc > 2 ? atof(argv[2]) : 0.25;
  static const char* names[] = {"mpi_allreduce", "mpi_reduce_scatter", "mpi_all_gather"};
  for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const int n = (int)(bytes / sizeof(float));
    float* a = malloc(bytes);
    float* b = malloc(bytes);
    for (int i = 0; i < n; ++i) a[i] = b[i] = 1.f;
    for (int op = ALLREDUCE; op <= ALL_GATHER; ++op) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      once(op, a, b, n, size);
      t = MPI_Wtime() - t;
      int calls = (int)(seconds / (t > 1e-7 ? t : 1e-7));
      calls = calls < 3 ? 3 : calls > 1000 ? 1000 : calls;
      MPI_Bcast(&calls, 1, MPI_INT, 0, MPI_COMM_WORLD);
      double* us = malloc(sizeof(double) * calls);
      for (int i = 0; i < calls; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        once(op, a, b, n, size);
        us[i] = (MPI_Wtime() - t) * 1e6;
      }
      qsort(us, calls, sizeof(double), cmp);
      if (rank == 0) {
        printf("RESULT %s %zu %.2f %d\n", names[op], bytes, us[calls / 2], calls);
        fflush(stdout);
      }
      free(us);
    }
    free(a);
    free(b);
  }
  MPI_Finalize();
  return 0;
}
