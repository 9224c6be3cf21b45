#include "runtime/device/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <thread>

#include <fmt/format.h>
#include <gloo/rendezvous/store.h>

#include "common/check.h"
#include "common/log.h"
#include "runtime/device/check.h"
#include "runtime/device/wait_verdict.h"

namespace ds::rt {

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* dev = nullptr;      // device staging buffer
  size_t dev_bytes = 0;
  void* host = nullptr;     // pinned host staging buffer: copies that never block the host
  size_t host_bytes = 0;
  std::string broken;       // why unusable; empty = usable
  int rank = 0;
  int device = 0;           // this communicator's GPU
  std::chrono::milliseconds timeout{60000};

  // Every entry point: refuses an unusable communicator, then makes the
  // communicator's GPU current on the calling thread (the CPU engine calls
  // from its comm worker thread, which has never chosen a device).
  void Enter(const char* what) {
    CheckUsable(what);
    Cuda(cudaSetDevice(device), what);
  }
  void Abort() {
    if (comm) ncclCommAbort(comm);
    comm = nullptr;
  }
  [[noreturn]] void Fail(const std::string& what) {
    broken = what;
    Abort();
    throw CommError(fmt::format("rank {}: {}", rank, what));
  }
  // A CUDA failure is this GPU's, not a peer's: the communicator is
  // aborted (peers must not wait for it) and a DeviceError is thrown.
  [[noreturn]] void FailDevice(const std::string& what) {
    broken = what;
    Abort();
    throw dev::DeviceError(fmt::format("rank {}: GPU {}: {}", rank, device, what));
  }
  void CheckUsable(const char* what) {
    if (!broken.empty())
      throw CommError(fmt::format("rank {}: {}: communicator is unusable after: {}", rank, what,
                                  broken));
  }
  void Cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      FailDevice(fmt::format("{}: {} ({})", what, cudaGetErrorString(e), cudaGetErrorName(e)));
  }
  // A non-blocking communicator may answer ncclInProgress before the
  // operation is on its stream (or, for init, before the communicator is
  // ready); nothing may be queued after it until NCCL's state settles, so it
  // is polled here, within the deadline.
  void Nccl(ncclResult_t r, const char* what) {
    const auto start = std::chrono::steady_clock::now();
    while (r == ncclInProgress) {
      if (std::chrono::steady_clock::now() - start > timeout)
        Fail(fmt::format("{}: timed out after {} ms", what, timeout.count()));
      Pause(start);
      ncclCommGetAsyncError(comm, &r);
    }
    if (r != ncclSuccess) Fail(fmt::format("{}: {}", what, ncclGetErrorString(r)));
  }
  // The first 2 ms of a wait only yield (a training step's wait is usually
  // shorter: a 100 us sleep would add up to 10% to a 1 ms step), then it
  // sleeps.
  static void Pause(std::chrono::steady_clock::time_point start) {
    if (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Growing frees the old buffer, and cudaFree / cudaFreeHost wait for the
  // whole device without a bound: a device collective the engine queued on
  // the stream, its peer gone, would hold the host there forever. So the
  // stream is waited for first, within the deadline (only when an old buffer
  // is freed: a few times per run).
  char* DeviceStaging(size_t bytes, const char* what) {
    if (bytes > dev_bytes) {
      if (dev) WaitFor(stream, what);
      if (dev) cudaFree(dev);
      dev = nullptr;
      dev_bytes = 0;
      Cuda(cudaMalloc(&dev, bytes), "cudaMalloc");
      dev_bytes = bytes;
    }
    return static_cast<char*>(dev);
  }
  char* HostStaging(size_t bytes, const char* what) {
    if (bytes > host_bytes) {
      if (host) WaitFor(stream, what);
      if (host) cudaFreeHost(host);
      host = nullptr;
      host_bytes = 0;
      Cuda(cudaMallocHost(&host, bytes), "cudaMallocHost");
      host_bytes = bytes;
    }
    return static_cast<char*>(host);
  }
  // Waits for stream `s`, watching NCCL's async error and the deadline
  // (wait_verdict.h decides what each look means).
  void WaitFor(cudaStream_t s, const char* what) {
    WaitUntil([s] { return dev::QueryStream(s); }, what);
  }
  // The same for the work before an event: query() is cudaStreamQuery's or
  // cudaEventQuery's answer, its "not ready" already taken.
  template <typename Query>
  void WaitUntil(Query query, const char* what) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    for (;;) {
      const cudaError_t q = query();
      ncclResult_t async = ncclSuccess;
      if (q == cudaErrorNotReady) ncclCommGetAsyncError(comm, &async);
      switch (dev::Judge(q, async, std::chrono::steady_clock::now() > deadline)) {
        case dev::WaitVerdict::kDone: return;
        case dev::WaitVerdict::kPending: break;
        case dev::WaitVerdict::kDeviceFault:
          FailDevice(fmt::format("{}: {} ({}) while waiting for the collective", what, cudaGetErrorString(q),
                                 cudaGetErrorName(q)));
        case dev::WaitVerdict::kCommFailed: Fail(fmt::format("{}: {}", what, ncclGetErrorString(async)));
        case dev::WaitVerdict::kTimedOut: Fail(fmt::format("{}: timed out after {} ms", what, timeout.count()));
      }
      Pause(start);
    }
  }
  // A collective on host memory: in[0..in_bytes) goes to device offset
  // in_at, op runs on the device buffer (dev_total bytes), and out_bytes
  // from device offset out_at come back to out. Both copies go through
  // pinned memory, so the host never blocks inside CUDA: the only wait is
  // WaitFor's, bounded by the deadline.
  template <typename Op>
  void Staged(const char* what, const void* in, size_t in_bytes, size_t in_at, void* out, size_t out_bytes,
              size_t out_at, size_t dev_total, Op op) {
    Enter(what);
    char* d = DeviceStaging(std::max<size_t>(dev_total, 1), what);
    char* h = HostStaging(std::max<size_t>(std::max(in_bytes, out_bytes), 1), what);
    if (in_bytes) {
      std::memcpy(h, in, in_bytes);
      Cuda(cudaMemcpyAsync(d + in_at, h, in_bytes, cudaMemcpyHostToDevice, stream), what);
    }
    Nccl(op(d), what);
    if (out_bytes) Cuda(cudaMemcpyAsync(h, d + out_at, out_bytes, cudaMemcpyDeviceToHost, stream), what);
    WaitFor(stream, what);
    if (out_bytes) std::memcpy(out, h, out_bytes);
  }
};

namespace {

ncclDataType_t TypeOf(Half16 f) { return f == Half16::kFp16 ? ncclHalf : ncclBfloat16; }

}  // namespace

std::unique_ptr<NcclCommunicator> NcclCommunicator::Connect(gloo::rendezvous::Store& store,
                                                            int rank, int size,
                                                            const NcclOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->rank = rank;
  impl->device = options.device;
  impl->timeout = options.timeout;
  impl->Cuda(cudaSetDevice(options.device), "cudaSetDevice");
  ncclUniqueId id;
  if (rank == 0) {
    impl->Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    store.set("nccl_id", std::vector<char>(id.internal, id.internal + sizeof(id.internal)));
  }
  try {
    store.wait({"nccl_id"}, options.timeout);
    auto v = store.get("nccl_id");
    DS_CHECK(v.size() == sizeof(id.internal));
    std::memcpy(id.internal, v.data(), v.size());
  } catch (const std::exception& e) {
    throw CommError(fmt::format("rank {}: nccl id from the store: {}", rank, e.what()));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  impl->Nccl(ncclCommInitRankConfig(&impl->comm, size, id, rank, &config), "ncclCommInitRank");
  impl->Cuda(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(impl), rank, size, options.timeout));
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : impl_(std::move(impl)), rank_(rank), size_(size), timeout_(timeout) {}

// Never waits without a bound: unwinding (a failure anywhere, the
// communicator may be mid-collective and peers gone) aborts; a clean end
// finalizes, flushing what is queued against the deadline, and aborts if
// that fails or runs out of time.
NcclCommunicator::~NcclCommunicator() {
  Impl& m = *impl_;
  cudaSetDevice(m.device);
  if (m.comm != nullptr && std::uncaught_exceptions() > 0) m.Abort();
  if (m.comm != nullptr) {
    const auto start = std::chrono::steady_clock::now();
    ncclResult_t r = ncclCommFinalize(m.comm);
    while (r == ncclInProgress && std::chrono::steady_clock::now() - start <= m.timeout) {
      Impl::Pause(start);
      ncclCommGetAsyncError(m.comm, &r);
    }
    if (r == ncclSuccess) {
      ncclCommDestroy(m.comm);
      m.comm = nullptr;
    } else {
      DS_LOG(Warn, Comm) << "rank " << m.rank << ": ncclCommFinalize: "
                         << (r == ncclInProgress ? fmt::format("timed out after {} ms", m.timeout.count())
                                                 : std::string(ncclGetErrorString(r)))
                         << "; aborting the communicator";
      m.Abort();
    }
  }
  if (m.stream) cudaStreamDestroy(m.stream);
  if (m.dev) cudaFree(m.dev);
  if (m.host) cudaFreeHost(m.host);
}

void NcclCommunicator::AllReduceSum(float* data, size_t n) {
  const size_t b = n * sizeof(float);
  impl_->Staged("allreduce", data, b, 0, data, b, 0, b, [&](void* d) {
    return ncclAllReduce(d, d, n, ncclFloat32, ncclSum, impl_->comm, impl_->stream);
  });
}

void NcclCommunicator::AllReduceSum(double* data, size_t n) {
  const size_t b = n * sizeof(double);
  impl_->Staged("allreduce", data, b, 0, data, b, 0, b, [&](void* d) {
    return ncclAllReduce(d, d, n, ncclFloat64, ncclSum, impl_->comm, impl_->stream);
  });
}

void NcclCommunicator::AllReduceSum(uint16_t* data, size_t n, Half16 format) {
  const size_t b = n * sizeof(uint16_t);
  impl_->Staged("allreduce16", data, b, 0, data, b, 0, b, [&](void* d) {
    return ncclAllReduce(d, d, n, TypeOf(format), ncclSum, impl_->comm, impl_->stream);
  });
}

namespace {

// Lays out uneven pieces at stride `max` so NCCL's equal-count collectives apply.
template <typename T>
std::vector<T> Pad(const T* in, const std::vector<size_t>& counts, size_t max) {
  std::vector<T> out(max * counts.size(), T{0});
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    std::copy(in + at, in + at + counts[r], out.begin() + r * max);
    at += counts[r];
  }
  return out;
}

}  // namespace

void NcclCommunicator::ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  const size_t max = *std::max_element(counts.begin(), counts.end());
  auto padded = Pad(in, counts, max);
  const size_t total = padded.size() * sizeof(float);
  const size_t mine = rank_ * max * sizeof(float);  // NCCL's in-place slot
  impl_->Staged("reduce_scatter", padded.data(), total, 0, out, counts[rank_] * sizeof(float), mine,
                total, [&](void* d) {
                  return ncclReduceScatter(d, static_cast<char*>(d) + mine, max, ncclFloat32, ncclSum,
                                           impl_->comm, impl_->stream);
                });
}

void NcclCommunicator::ReduceScatter(uint16_t* in, uint16_t* out,
                                     const std::vector<size_t>& counts, Half16 format) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  const size_t max = *std::max_element(counts.begin(), counts.end());
  auto padded = Pad(in, counts, max);
  const size_t total = padded.size() * sizeof(uint16_t);
  const size_t mine = rank_ * max * sizeof(uint16_t);  // NCCL's in-place slot
  impl_->Staged("reduce_scatter16", padded.data(), total, 0, out, counts[rank_] * sizeof(uint16_t),
                mine, total, [&](void* d) {
                  return ncclReduceScatter(d, static_cast<char*>(d) + mine, max, TypeOf(format), ncclSum,
                                           impl_->comm, impl_->stream);
                });
}

template <typename T>
static void GatherPadded(NcclCommunicator::Impl& impl, int rank, const T* in, T* out,
                         const std::vector<size_t>& counts, ncclDataType_t type) {
  const size_t max = *std::max_element(counts.begin(), counts.end());
  std::vector<T> mine(max, T{0}), all(max * counts.size());
  std::copy(in, in + counts[rank], mine.begin());
  const size_t total = all.size() * sizeof(T);
  // The input goes to this rank's slot; NCCL's in-place allgather reads it there.
  const size_t slot = rank * max * sizeof(T);
  impl.Staged("allgather", mine.data(), max * sizeof(T), slot, all.data(), total, 0, total, [&](void* d) {
    return ncclAllGather(static_cast<char*>(d) + slot, d, max, type, impl.comm, impl.stream);
  });
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    std::copy(all.begin() + r * max, all.begin() + r * max + counts[r], out + at);
    at += counts[r];
  }
}

void NcclCommunicator::AllGather(const float* in, float* out, const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  GatherPadded(*impl_, rank_, in, out, counts, ncclFloat32);
}

void NcclCommunicator::AllGather(const uint16_t* in, uint16_t* out,
                                 const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  GatherPadded(*impl_, rank_, in, out, counts, ncclHalf);  // 16-bit payload, no arithmetic
}

void NcclCommunicator::Broadcast(void* data, size_t n, int root) {
  impl_->Staged("broadcast", data, rank_ == root ? n : 0, 0, data, n, 0, n, [&](void* d) {
    return ncclBroadcast(d, d, n, ncclInt8, root, impl_->comm, impl_->stream);
  });
}

ncclComm_t NcclCommunicator::handle() const { return impl_->comm; }
cudaStream_t NcclCommunicator::stream() const { return impl_->stream; }
void NcclCommunicator::WaitFor(cudaStream_t s, const char* what) {
  impl_->Enter(what);
  impl_->WaitFor(s, what);
}
void NcclCommunicator::WaitForEvent(cudaEvent_t e, const char* what) {
  impl_->Enter(what);
  impl_->WaitUntil([e] { return dev::QueryEvent(e); }, what);
}
void NcclCommunicator::Check(ncclResult_t result, const char* what) {
  impl_->Enter(what);
  impl_->Nccl(result, what);
}

void NcclCommunicator::Barrier() {
  float one = 1.f;
  AllReduceSum(&one, 1);
}

}  // namespace ds::rt
