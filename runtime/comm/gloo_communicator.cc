#include "runtime/comm/gloo_communicator.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "common/check.h"
#include "common/log.h"
#include "common/netif.h"
#include "runtime/comm/gloo_loop_ticker.h"
#include "runtime/numeric/half.h"

namespace ds::rt {
namespace {

// Gloo's reduction callback (c may alias a or b). It runs on the critical
// path of every gradient allreduce: cloned for AVX-512/AVX2 and vectorized
// whatever the build type (GCC's -O2 cost model does not vectorize a loop
// of unknown length over possibly aliasing pointers; ivdep says the
// elementwise sum has no loop-carried dependence, which holds even in place).
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("tree-vectorize")))
void SumInto(void* c, const void* a, const void* b, size_t n) {
  T* out = static_cast<T*>(c);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

void SumFp16(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = FloatToHalf(HalfToFloat(x[i]) + HalfToFloat(y[i]));
}

void SumBf16(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(Bf16ToFloat(x[i]) + Bf16ToFloat(y[i]));
}

// Gloo's ring for 3+ ranks; for 2 ranks Gloo's bcube is one exchange
// instead of the ring's two phases (same bytes, half the round trips).
// Segments of 4 MiB: fewer wake-ups of the transport thread per step.
void SetAlgorithm(gloo::AllreduceOptions& opts, int size) {
  opts.setAlgorithm(size == 2 ? gloo::AllreduceOptions::Algorithm::BCUBE
                              : gloo::AllreduceOptions::Algorithm::RING);
  opts.setMaxSegmentSize(4 << 20);
}

size_t Offset(const std::vector<size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
}

// This host's largest piece for the persistent collectives: half of
// net.core.wmem_max (the kernel grants SO_SNDBUF up to twice that), at most
// 1 MiB (larger pieces measured no faster).
size_t LocalBulkChunkBytes(size_t requested) {
  if (requested > 0) return requested;
  size_t wmem_max = 212992;  // Linux's default
  std::ifstream("/proc/sys/net/core/wmem_max") >> wmem_max;
  return std::clamp<size_t>(wmem_max / 2, 4096, 1 << 20);
}

void MinInto(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint64_t*>(c);
  const auto* x = static_cast<const uint64_t*>(a);
  const auto* y = static_cast<const uint64_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = std::min(x[i], y[i]);
}

// The piece every rank uses: the smallest of all ranks' (hosts may differ in
// wmem_max, and the ranks' pieces must match call for call).
size_t BulkChunkBytes(const std::shared_ptr<gloo::Context>& context, size_t requested,
                      std::chrono::milliseconds timeout) {
  uint64_t bytes = LocalBulkChunkBytes(requested);
  gloo::AllreduceOptions opts(context);
  opts.setOutput(&bytes, 1);
  opts.setReduceFunction(&MinInto);
  opts.setTag(0);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
  return bytes;
}

// The local address that routes to `master_addr` (IPv4 or IPv6), which
// Gloo's devices bind to; loopback when it is empty or has no route.
std::string LocalAddressTowards(const std::string& master_addr) {
  if (master_addr.empty()) return "127.0.0.1";
  Result<Route> route = RouteTo(master_addr);
  return route.ok() ? route->local_addr : "127.0.0.1";
}

// One allreduce of `n` elements in place with `reduce` (Gloo's algorithm for
// `size` ranks, bounded by `timeout`).
template <typename T>
void AllReduceInPlace(const std::shared_ptr<gloo::Context>& context, T* data, size_t n,
                      void (*reduce)(void*, const void*, const void*, size_t), uint32_t tag,
                      std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data, n);
  opts.setReduceFunction(reduce);
  SetAlgorithm(opts, context->size);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

// `base` as connectFullMesh sees it: the ticker pauses while a request waits
// for the store's answer (seconds, when a peer is late) and turns the loop
// again for the pairs' connects in between.
class TickerPausingStore final : public gloo::rendezvous::Store {
 public:
  TickerPausingStore(gloo::rendezvous::Store& base, GlooLoopTicker& ticker) : base_(base), ticker_(ticker) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    Paused([&] { base_.set(key, data); });
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<char> value;
    Paused([&] { value = base_.get(key); });
    return value;
  }
  void wait(const std::vector<std::string>& keys) override { Paused([&] { base_.wait(keys); }); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    Paused([&] { base_.wait(keys, timeout); });
  }

 private:
  void Paused(const std::function<void()>& request) {
    struct Resume {
      GlooLoopTicker& ticker;
      ~Resume() { ticker.Resume(); }
    };
    ticker_.Pause();
    Resume resume{ticker_};
    request();
  }

  gloo::rendezvous::Store& base_;
  GlooLoopTicker& ticker_;
};

// The descriptors of this process's connected TCP sockets.
std::set<int> ConnectedTcpSockets() {
  std::set<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    int type = 0;
    socklen_t len = sizeof(type);
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    if (peer.ss_family == AF_INET || peer.ss_family == AF_INET6) fds.insert(fd);
  }
  return fds;
}

// Our own duplicates of the connected TCP sockets in `now` but not in
// `before`: the pairs' sockets a connect made. Gloo's TCP pair keeps its
// socket to itself (a protected member; and Debian's gloo headers for it do
// not compile), so Abort finds them this way: dstrain connects from its
// training thread while no other thread of it opens sockets.
std::vector<int> DupNewSockets(const std::set<int>& before, const std::set<int>& now) {
  std::vector<int> fds;
  for (int fd : now) {
    if (before.count(fd) != 0) continue;
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup >= 0) fds.push_back(dup);
  }
  return fds;
}

}  // namespace

std::unique_ptr<GlooCommunicator> GlooCommunicator::Connect(gloo::rendezvous::Store& store,
                                                            int rank, int size,
                                                            const GlooOptions& options) {
  DS_CHECK(size >= 1 && rank >= 0 && rank < size);
  // A write to a dead peer must fail with EPIPE (-> CommError), not kill us.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  gloo::transport::tcp::attr attr;
  if (!options.iface.empty()) {
    attr.iface = options.iface;
  } else {
    attr.hostname = LocalAddressTowards(options.master_addr);
  }
  const std::set<int> before = ConnectedTcpSockets();
  try {
    // Each pair's connect and sync switch waits for a turn of the device's
    // loop; the ticker goes last (after a failure it holds the device's last reference).
    std::optional<GlooLoopTicker> ticker;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    ticker.emplace(device);
    TickerPausingStore paused(store, *ticker);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options.timeout);
    context->connectFullMesh(paused, device);
    std::shared_ptr<gloo::rendezvous::Context> bulk;
    size_t bulk_chunk_bytes = 0;
    if (size > 1 && options.bulk) {
      bulk_chunk_bytes = BulkChunkBytes(context, options.bulk_chunk_bytes, options.timeout);
      bulk = std::make_shared<gloo::rendezvous::Context>(rank, size);
      bulk->setTimeout(options.timeout);
      gloo::rendezvous::PrefixStore bulk_store("bulk", paused);
      bulk->connectFullMesh(bulk_store, device);
      for (int peer = 0; peer < size; ++peer)
        if (peer != rank) bulk->getPair(peer)->setSync(true, /*busyPoll=*/false);
    }
    DS_LOG(Info, Comm) << "gloo: rank " << rank << "/" << size << " connected on "
                       << device->str();
    std::vector<int> abort_fds = DupNewSockets(before, ConnectedTcpSockets());
    return std::unique_ptr<GlooCommunicator>(
        new GlooCommunicator(std::move(context), std::move(bulk),
                             bulk_chunk_bytes, rank, size,
                             options.timeout, std::move(abort_fds)));
  } catch (const std::exception& e) {
    throw CommError(fmt::format("rank {}: gloo connect ({} ranks, {}) failed: {}", rank, size,
                                options.iface.empty() ? attr.hostname : options.iface,
                                e.what()));
  }
}

GlooCommunicator::GlooCommunicator(std::shared_ptr<gloo::Context> context,
                                   std::shared_ptr<gloo::Context> bulk, size_t bulk_chunk_bytes,
                                   int rank, int size, std::chrono::milliseconds timeout,
                                   std::vector<int> abort_fds)
    : context_(std::move(context)),
      bulk_(std::move(bulk)),
      bulk_chunk_bytes_(bulk_chunk_bytes),
      bulk_staging_(bulk_ ? std::max<size_t>(bulk_chunk_bytes / sizeof(float), size + 1) : 0),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      abort_fds_(std::move(abort_fds)) {}

GlooCommunicator::~GlooCommunicator() {
  {
    // Each pair's close waits for a turn of the loop, and so does the
    // device's end: everything holding a context goes while the ticker lives
    // (the reduce-scatter classes hold the bulk one).
    GlooLoopTicker ticker(context_->getDevice());
    scatter_classes_.clear();
    bulk_.reset();
    context_.reset();
  }
  for (int fd : abort_fds_) ::close(fd);
}

bool GlooCommunicator::Abort() {
  aborted_ = true;
  for (int fd : abort_fds_) ::shutdown(fd, SHUT_RDWR);
  return true;
}

void GlooCommunicator::Run(const char* what, const std::function<void()>& fn) {
  if (broken_.empty() && aborted_) broken_ = "the communicator was aborted";
  if (!broken_.empty())
    throw CommError(fmt::format("rank {}: {}: communicator is unusable after: {}", rank_, what,
                                broken_));
  try {
    fn();
  } catch (const std::exception& e) {
    broken_ = aborted_ ? fmt::format("{} aborted ({})", what, e.what())
                       : fmt::format("{} failed: {}", what, e.what());
    throw CommError(fmt::format("rank {}: {}", rank_, broken_));
  }
}

void GlooCommunicator::AllReduceSum(float* data, size_t n) {
  if (size_ == 1 || n == 0) return;
  Run("allreduce", [&] { AllReduceInPlace(context_, data, n, &SumInto<float>, NextTag(), timeout_); });
}

void GlooCommunicator::AllReduceSum(double* data, size_t n) {
  if (size_ == 1 || n == 0) return;
  Run("allreduce", [&] { AllReduceInPlace(context_, data, n, &SumInto<double>, NextTag(), timeout_); });
}

void GlooCommunicator::AllReduceSum(uint16_t* data, size_t n, Half16 format) {
  if (size_ == 1 || n == 0) return;
  Run("allreduce16", [&] {
    AllReduceInPlace(context_, data, n, format == Half16::kFp16 ? &SumFp16 : &SumBf16, NextTag(),
                     timeout_);
  });
}

void GlooCommunicator::ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  if (size_ == 1) {
    if (out != in) std::memcpy(out, in, counts[0] * sizeof(float));
    return;
  }
  Run("reduce_scatter", [&] {
    std::vector<int> recv(counts.begin(), counts.end());
    // Gloo's halving-doubling reduce-scatter leaves this rank's slice at the
    // front of the buffer.
    gloo::ReduceScatterHalvingDoubling<float> algo(context_, {in}, static_cast<int>(total), recv);
    algo.run();
    std::memmove(out, in, counts[rank_] * sizeof(float));
  });
}

void GlooCommunicator::ReduceScatter(uint16_t* in, uint16_t* out,
                                     const std::vector<size_t>& counts, Half16 format) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  // Gloo has no bf16 reduce-scatter: allreduce in 16 bit and keep our slice.
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  AllReduceSum(in, total, format);
  std::memmove(out, in + Offset(counts, rank_), counts[rank_] * sizeof(uint16_t));
}

void GlooCommunicator::AllGatherBytes(const void* in, void* out,
                                      const std::vector<size_t>& counts, size_t elem) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  if (size_ == 1) {
    if (out != in) std::memmove(out, in, counts[0] * elem);
    return;
  }
  Run("allgather", [&] {
    gloo::AllgathervOptions opts(context_);
    std::vector<size_t> bytes(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) bytes[i] = counts[i] * elem;
    opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes[rank_]);
    opts.setOutput(static_cast<char*>(out), bytes);
    opts.setTag(NextTag());
    opts.setTimeout(timeout_);
    gloo::allgatherv(opts);
  });
}

void GlooCommunicator::AllGather(const float* in, float* out, const std::vector<size_t>& counts) {
  AllGatherBytes(in, out, counts, sizeof(float));
}

void GlooCommunicator::AllGather(const uint16_t* in, uint16_t* out,
                                 const std::vector<size_t>& counts) {
  AllGatherBytes(in, out, counts, sizeof(uint16_t));
}

void GlooCommunicator::Broadcast(void* data, size_t n, int root) {
  if (size_ == 1 || n == 0) return;
  Run("broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    if (rank_ == root) opts.setInput(static_cast<char*>(data), n);
    opts.setOutput(static_cast<char*>(data), n);
    opts.setRoot(root);
    opts.setTag(NextTag());
    opts.setTimeout(timeout_);
    gloo::broadcast(opts);
  });
}

void GlooCommunicator::Barrier() {
  if (size_ == 1) return;
  Run("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTag(NextTag());
    opts.setTimeout(timeout_);
    gloo::barrier(opts);
  });
}

}  // namespace ds::rt
