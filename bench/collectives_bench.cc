// collectives_bench: our runtime's collectives (runtime/comm, GlooCommunicator)
// between two forked ranks on loopback, at every size from 1 KB to max_bytes
// (powers of 4), next to the two ceilings on this machine: memcpy of the same
// bytes (one thread) and a loopback TCP exchange of the same bytes (both
// ranks send and receive at once, one socket). Rank 0 prints one line per
// (what, size): "RESULT <what> <bytes> <median us> <calls>".
//   what: allreduce       MakePersistentAllReduce (the path dstrain's gradients take)
//         allreduce_async AllReduceSum (Gloo's bcube on the async context)
//         reduce_scatter  MakePersistentReduceScatter, in = bytes, out = bytes / 2
//         all_gather      MakePersistentAllGather, in = bytes / 2, out = bytes
//         memcpy          memcpy of bytes (rank 0 alone)
//         tcp             both ranks send bytes to each other over 127.0.0.1 at once
// Sizes are the larger buffer, as in nccl-tests. The number of calls per point
// is rank 0's choice from a warm-up (about `seconds` per point, 3 to 1000),
// broadcast so both ranks run the same count. bench/collectives drives it.
// Usage: collectives_bench [max_bytes=268435456] [seconds=0.25]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/file_store.h>

#include "runtime/comm/gloo_communicator.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Times `once` on both ranks: one warm-up call, rank 0 picks the count, then
// the median of that many calls. `sync` makes both ranks start each call
// together (a barrier) where `once` alone does not synchronise them.
void Point(ds::rt::Communicator& comm, const char* what, size_t bytes, double seconds,
           const std::function<void()>& once) {
  comm.Barrier();
  auto t = Clock::now();
  once();
  int calls = std::clamp(static_cast<int>(seconds / std::max(Seconds(t), 1e-7)), 3, 1000);
  comm.Broadcast(&calls, sizeof calls, 0);
  std::vector<double> us;
  for (int i = 0; i < calls; ++i) {
    comm.Barrier();
    t = Clock::now();
    once();
    us.push_back(Seconds(t) * 1e6);
  }
  std::nth_element(us.begin(), us.begin() + calls / 2, us.end());
  if (comm.rank() == 0) {
    std::printf("RESULT %s %zu %.2f %d\n", what, bytes, us[calls / 2], calls);
    std::fflush(stdout);
  }
}

void WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) { std::perror("collectives_bench: write"); std::exit(1); }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) { std::perror("collectives_bench: read"); std::exit(1); }
    p += r;
    n -= static_cast<size_t>(r);
  }
}

int Rank(int rank, const std::string& dir, int sock, size_t max_bytes, double seconds) {
  gloo::rendezvous::FileStore store(dir);
  ds::rt::GlooOptions options;
  options.timeout = std::chrono::milliseconds(600000);
  auto comm = ds::rt::GlooCommunicator::Connect(store, rank, 2, options);
  for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
    const size_t n = bytes / sizeof(float);
    {
      std::vector<char> a(bytes, 1), b(bytes, 2);
      Point(*comm, "memcpy", bytes, seconds, [&] {
        if (rank == 0) std::memcpy(b.data(), a.data(), bytes);
      });
      Point(*comm, "tcp", bytes, seconds, [&] {
        if (bytes <= 65536) {  // fits in the socket buffer: no sender thread needed
          WriteAll(sock, a.data(), bytes);
          ReadAll(sock, b.data(), bytes);
          return;
        }
        std::thread sender([&] { WriteAll(sock, a.data(), bytes); });
        ReadAll(sock, b.data(), bytes);
        sender.join();
      });
    }
    {
      std::vector<float> v(n, 1.f);
      auto persistent = comm->MakePersistentAllReduce(v.data(), n);
      Point(*comm, "allreduce", bytes, seconds, [&] { persistent->Run(); });
      Point(*comm, "allreduce_async", bytes, seconds, [&] { comm->AllReduceSum(v.data(), n); });
    }
    {
      const std::vector<size_t> counts{n / 2, n - n / 2};
      std::vector<float> full(n, 1.f), half(counts[rank], 1.f);
      auto rs = comm->MakePersistentReduceScatter(counts);
      Point(*comm, "reduce_scatter", bytes, seconds, [&] { rs->Run(full.data(), half.data()); });
      auto ag = comm->MakePersistentAllGather(counts);
      Point(*comm, "all_gather", bytes, seconds, [&] { ag->Run(half.data(), full.data()); });
    }
  }
  comm->Barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (256u << 20);
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0.25;
  char tmpl[] = "/tmp/collectives-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  // The TCP ceiling's socket: rank 0 listens on loopback, rank 1 connects.
  // Socket buffers as large as the kernel allows (net.core.[rw]mem_max), as Gloo
  // asks for its own pairs, set before listen/connect so the window scales.
  auto big_buffers = [](int fd) {
    for (int opt : {SO_SNDBUF, SO_RCVBUF}) {
      int bytes = 64 << 20;  // the kernel caps it at [rw]mem_max
      ::setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
    }
  };
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  big_buffers(listener);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("collectives_bench: listen");
    return 1;
  }
  std::printf("collectives of 1 KB to %zu bytes, 2 ranks on loopback, ~%.2f s per point\n",
              max_bytes, seconds);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    ::close(listener);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    big_buffers(s);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(1);
    const int one = 1;
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    _exit(Rank(1, dir, s, max_bytes, seconds));
  }
  const int s = ::accept(listener, nullptr, nullptr);
  const int one = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int code = Rank(0, dir, s, max_bytes, seconds);
  int status = 0;
  waitpid(child, &status, 0);
  std::system(("rm -rf " + dir).c_str());
  return code != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
