#include "runtime/device/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

#include <fmt/format.h>
#include <gloo/rendezvous/store.h>

#include "common/check.h"

namespace ds::rt {

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* dev = nullptr;      // staging buffer
  size_t dev_bytes = 0;
  std::string broken;       // why unusable; empty = usable
  int rank = 0;
  std::chrono::milliseconds timeout{60000};

  void Fail(const std::string& what) {
    broken = what;
    if (comm) ncclCommAbort(comm);
    comm = nullptr;
    throw CommError(fmt::format("rank {}: {}", rank, what));
  }
  void CheckUsable(const char* what) {
    if (!broken.empty())
      throw CommError(fmt::format("rank {}: {}: communicator is unusable after: {}", rank, what,
                                  broken));
  }
  void Cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) Fail(fmt::format("{}: {}", what, cudaGetErrorString(e)));
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
  void* Staging(size_t bytes) {
    if (bytes > dev_bytes) {
      if (dev) cudaFree(dev);
      dev = nullptr;
      Cuda(cudaMalloc(&dev, bytes), "cudaMalloc");
      dev_bytes = bytes;
    }
    return dev;
  }
  // Waits for the stream, watching NCCL's async error and the deadline.
  void Wait(const char* what) { WaitFor(stream, what); }
  void WaitFor(cudaStream_t s, const char* what) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout;
    for (;;) {
      cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) Cuda(q, what);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        Fail(fmt::format("{}: {}", what, ncclGetErrorString(async)));
      if (std::chrono::steady_clock::now() > deadline)
        Fail(fmt::format("{}: timed out after {} ms", what, timeout.count()));
      Pause(start);
    }
  }
  // Copies host -> device, runs op on the device buffer, copies back.
  template <typename Op>
  void Staged(const char* what, const void* in, size_t in_bytes, void* out, size_t out_bytes,
              size_t dev_total, size_t out_offset, Op op) {
    CheckUsable(what);
    char* d = static_cast<char*>(Staging(std::max<size_t>(dev_total, 1)));
    if (in_bytes) Cuda(cudaMemcpyAsync(d, in, in_bytes, cudaMemcpyHostToDevice, stream), what);
    Nccl(op(d), what);
    if (out_bytes)
      Cuda(cudaMemcpyAsync(out, d + out_offset, out_bytes, cudaMemcpyDeviceToHost, stream), what);
    Wait(what);
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

NcclCommunicator::~NcclCommunicator() {
  if (impl_->comm) ncclCommDestroy(impl_->comm);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
  if (impl_->dev) cudaFree(impl_->dev);
}

void NcclCommunicator::AllReduceSum(float* data, size_t n) {
  const size_t b = n * sizeof(float);
  impl_->Staged("allreduce", data, b, data, b, b, 0, [&](void* d) {
    return ncclAllReduce(d, d, n, ncclFloat32, ncclSum, impl_->comm, impl_->stream);
  });
}

void NcclCommunicator::AllReduceSum(double* data, size_t n) {
  const size_t b = n * sizeof(double);
  impl_->Staged("allreduce", data, b, data, b, b, 0, [&](void* d) {
    return ncclAllReduce(d, d, n, ncclFloat64, ncclSum, impl_->comm, impl_->stream);
  });
}

void NcclCommunicator::AllReduceSum(uint16_t* data, size_t n, Half16 format) {
  const size_t b = n * sizeof(uint16_t);
  impl_->Staged("allreduce16", data, b, data, b, b, 0, [&](void* d) {
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
  impl_->Staged("reduce_scatter", padded.data(), total, out, counts[rank_] * sizeof(float), total,
                mine, [&](void* d) {
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
  impl_->Staged("reduce_scatter16", padded.data(), total, out, counts[rank_] * sizeof(uint16_t),
                total, mine, [&](void* d) {
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
  impl.Staged("allgather", mine.data(), 0, all.data(), total, total, 0, [&](void* d) {
    char* slot = static_cast<char*>(d) + rank * max * sizeof(T);
    impl.Cuda(cudaMemcpyAsync(slot, mine.data(), max * sizeof(T), cudaMemcpyHostToDevice, impl.stream), "allgather");
    return ncclAllGather(slot, d, max, type, impl.comm, impl.stream);
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
  impl_->Staged("broadcast", data, rank_ == root ? n : 0, data, n, n, 0, [&](void* d) {
    return ncclBroadcast(d, d, n, ncclInt8, root, impl_->comm, impl_->stream);
  });
}

ncclComm_t NcclCommunicator::handle() const { return impl_->comm; }
cudaStream_t NcclCommunicator::stream() const { return impl_->stream; }
void NcclCommunicator::WaitFor(cudaStream_t s, const char* what) {
  impl_->CheckUsable(what);
  impl_->WaitFor(s, what);
}
void NcclCommunicator::Check(ncclResult_t result, const char* what) {
  impl_->CheckUsable(what);
  impl_->Nccl(result, what);
}

void NcclCommunicator::Barrier() {
  float one = 1.f;
  AllReduceSum(&one, 1);
}

}  // namespace ds::rt
