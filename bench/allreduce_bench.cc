// allreduce_bench: one gradient's allreduce between two forked ranks on
// loopback, through GlooCommunicator's two paths: AllReduceSum (Gloo's
// bcube on the async context: every message goes through Gloo's event-loop
// thread) and MakePersistentAllReduce (halving-doubling on sync-mode pairs,
// the path dstrain's gradients take). Prints wall time per call (mean, p10,
// p50, p90) and the process CPU time per call, for rank 0.
// Usage: allreduce_bench [floats=669706 (the MLP's gradient)] [iterations=300]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/gloo_communicator.h"

namespace {

double CpuMs() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
         (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

template <typename Fn>
void Measure(int rank, const char* name, int iterations, Fn&& once) {
  for (int i = 0; i < 20; ++i) once();  // warm-up
  std::vector<double> ms;
  const double cpu0 = CpuMs();
  for (int i = 0; i < iterations; ++i) {
    const auto t = std::chrono::steady_clock::now();
    once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t)
                     .count());
  }
  const double cpu = (CpuMs() - cpu0) / iterations;
  std::sort(ms.begin(), ms.end());
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / iterations;
  if (rank == 0)
    std::printf("%-34s mean %6.3f  p10 %6.3f  p50 %6.3f  p90 %6.3f ms, CPU %6.3f ms\n", name,
                mean, ms[iterations / 10], ms[iterations / 2], ms[iterations * 9 / 10], cpu);
}

int Rank(int rank, const std::string& dir, size_t n, int iterations) {
  gloo::rendezvous::FileStore store(dir);
  auto comm = ds::rt::GlooCommunicator::Connect(store, rank, 2, ds::rt::GlooOptions{});
  std::vector<float> v(n, 1.f);
  Measure(rank, "AllReduceSum (async, bcube)", iterations,
          [&] { comm->AllReduceSum(v.data(), v.size()); });
  auto persistent = comm->MakePersistentAllReduce(v.data(), v.size());
  Measure(rank, "persistent (sync, halving-doubling)", iterations, [&] { persistent->Run(); });
  comm->Barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 669706;
  const int iterations = std::max(10, argc > 2 ? std::atoi(argv[2]) : 300);
  char tmpl[] = "/tmp/allreduce-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::printf("allreduce of %zu floats (%.2f MB), 2 ranks on loopback, %d calls\n", n,
              n * 4 / 1e6, iterations);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) _exit(Rank(1, dir, n, iterations));
  const int code = Rank(0, dir, n, iterations);
  int status = 0;
  waitpid(child, &status, 0);
  std::system(("rm -rf " + dir).c_str());
  return code != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
