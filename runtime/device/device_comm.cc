#include "runtime/device/device_comm.h"

#include <algorithm>
#include <numeric>

#include "common/check.h"
#include "runtime/device/nccl_communicator.h"
#include "runtime/device/buffer.h"
#include "runtime/device/device_comm_base.h"
#include "runtime/device/kernels.h"

namespace ds::rt::dev {
namespace {

ncclDataType_t NcclType(Precision f) {
  switch (f) {
    case Precision::kFp16: return ncclHalf;
    case Precision::kBf16: return ncclBfloat16;
    case Precision::kFp32: break;
  }
  return ncclFloat32;
}

Half16 HalfOf(Precision f) { return f == Precision::kFp16 ? Half16::kFp16 : Half16::kBf16; }

bool Uniform(const std::vector<size_t>& counts) {
  return std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == counts[0]; });
}

uint8_t* Bytes(void* p) { return static_cast<uint8_t*>(p); }
const uint8_t* Bytes(const void* p) { return static_cast<const uint8_t*>(p); }

// On the communicator's own stream; the host's waits are NCCL's bounded ones.
class NcclDeviceComm final : public DeviceCommBase {
 public:
  explicit NcclDeviceComm(NcclCommunicator& nccl) : DeviceCommBase(nccl.stream()), nccl_(nccl) {}

  int rank() const override { return nccl_.rank(); }
  int size() const override { return nccl_.size(); }

  void AllReduceSum(void* data, size_t n, Precision fmt, cudaStream_t after) override {
    After(after);
    nccl_.Check(ncclAllReduce(data, data, n, NcclType(fmt), ncclSum, nccl_.handle(), stream()), "allreduce");
  }

  void AllReduceSum(double* data, size_t n, cudaStream_t after) override {
    After(after);
    nccl_.Check(ncclAllReduce(data, data, n, ncclFloat64, ncclSum, nccl_.handle(), stream()), "allreduce");
  }

  // NCCL's reduce-scatter takes equal counts: uneven pieces are laid out at
  // stride max (the padding is reduced too and dropped).
  void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                     cudaStream_t after) override {
    DS_CHECK(static_cast<int>(counts.size()) == size());
    After(after);
    const size_t es = ElementSize(fmt), max = *std::max_element(counts.begin(), counts.end());
    if (Uniform(counts)) {
      nccl_.Check(ncclReduceScatter(in, out, max, NcclType(fmt), ncclSum, nccl_.handle(), stream()),
                  "reduce_scatter");
      return;
    }
    Pad(pad_in_, max * counts.size() * es, "reduce_scatter");
    Pad(pad_out_, max * es, "reduce_scatter");
    size_t at = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      Copy(pad_in_.data() + r * max * es, Bytes(in) + at * es, counts[r] * es);
      at += counts[r];
    }
    nccl_.Check(ncclReduceScatter(pad_in_.data(), pad_out_.data(), max, NcclType(fmt), ncclSum, nccl_.handle(),
                                  stream()),
                "reduce_scatter");
    Copy(out, pad_out_.data(), counts[rank()] * es);
  }

  void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                 cudaStream_t after) override {
    DS_CHECK(static_cast<int>(counts.size()) == size());
    After(after);
    const size_t es = ElementSize(fmt), max = *std::max_element(counts.begin(), counts.end());
    if (Uniform(counts)) {
      nccl_.Check(ncclAllGather(in, out, max, NcclType(fmt), nccl_.handle(), stream()), "allgather");
      return;
    }
    Pad(pad_out_, max * counts.size() * es, "allgather");
    uint8_t* slot = pad_out_.data() + rank() * max * es;
    Copy(slot, in, counts[rank()] * es);
    nccl_.Check(ncclAllGather(slot, pad_out_.data(), max, NcclType(fmt), nccl_.handle(), stream()), "allgather");
    size_t at = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      Copy(Bytes(out) + at * es, pad_out_.data() + r * max * es, counts[r] * es);
      at += counts[r];
    }
  }

  void Synchronize(cudaStream_t s) override { nccl_.WaitFor(s, "device step"); }
  void WaitEvent(cudaEvent_t e) override { nccl_.WaitForEvent(e, "device step"); }

 private:
  void Copy(void* to, const void* from, size_t bytes) {
    if (bytes > 0) DS_CUDA(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream()));
  }
  // `b` grown to `bytes`. Growing frees the old buffer, and cudaFree waits
  // for the whole device without a bound, collectives whose peer is gone
  // included: the stream is waited for first, within the collective
  // deadline (aborting and throwing past it). A few times per run.
  void Pad(DeviceBuffer<uint8_t>& b, size_t bytes, const char* what) {
    if (bytes > b.size() && b.size() > 0) nccl_.WaitFor(stream(), what);
    b.Reserve(bytes);
  }

  NcclCommunicator& nccl_;
  DeviceBuffer<uint8_t> pad_in_, pad_out_;  // padding for uneven pieces
};

// On a stream of its own; every collective is complete when it returns
// (what the caller queued on stream() after one, the engine's accumulation,
// may not be: Join still orders it).
class StagedDeviceComm final : public DeviceCommBase {
 public:
  explicit StagedDeviceComm(Communicator& host) : host_(host) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }

  void AllReduceSum(void* data, size_t n, Precision fmt, cudaStream_t after) override {
    const size_t bytes = n * ElementSize(fmt);
    uint8_t* h = Down(a_, data, bytes, after);
    if (fmt == Precision::kFp32) host_.AllReduceSum(reinterpret_cast<float*>(h), n);
    else host_.AllReduceSum(reinterpret_cast<uint16_t*>(h), n, HalfOf(fmt));
    Up(data, h, bytes);
  }

  void AllReduceSum(double* data, size_t n, cudaStream_t after) override {
    const size_t bytes = n * sizeof(double);
    uint8_t* h = Down(a_, data, bytes, after);
    host_.AllReduceSum(reinterpret_cast<double*>(h), n);
    Up(data, h, bytes);
  }

  void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                     cudaStream_t after) override {
    const size_t es = ElementSize(fmt);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    uint8_t* h = Down(a_, in, total * es, after);
    b_.Reserve(counts[rank()] * es);
    if (fmt == Precision::kFp32)
      host_.ReduceScatter(reinterpret_cast<float*>(h), reinterpret_cast<float*>(b_.data()), counts);
    else
      host_.ReduceScatter(reinterpret_cast<uint16_t*>(h), reinterpret_cast<uint16_t*>(b_.data()), counts,
                          HalfOf(fmt));
    Up(out, b_.data(), counts[rank()] * es);
  }

  void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                 cudaStream_t after) override {
    const size_t es = ElementSize(fmt);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    uint8_t* h = Down(a_, in, counts[rank()] * es, after);
    b_.Reserve(total * es);
    if (fmt == Precision::kFp32)
      host_.AllGather(reinterpret_cast<const float*>(h), reinterpret_cast<float*>(b_.data()), counts);
    else
      host_.AllGather(reinterpret_cast<const uint16_t*>(h), reinterpret_cast<uint16_t*>(b_.data()), counts);
    Up(out, b_.data(), total * es);
  }

 private:
  // `bytes` of `from` into pinned `b`, once `after`'s work is done.
  uint8_t* Down(PinnedBuffer<uint8_t>& b, const void* from, size_t bytes, cudaStream_t after) {
    b.Reserve(std::max<size_t>(bytes, 1));
    DS_CUDA(cudaStreamSynchronize(after));
    CopyToHost(b.data(), Bytes(from), bytes, stream());
    DS_CUDA(cudaStreamSynchronize(stream()));
    return b.data();
  }
  void Up(void* to, const uint8_t* from, size_t bytes) {
    CopyToDevice(Bytes(to), from, bytes, stream());
    DS_CUDA(cudaStreamSynchronize(stream()));
  }

  Communicator& host_;
  PinnedBuffer<uint8_t> a_, b_;
};

// World 1: the sum over one rank is its own data, its slice all of it.
// Each call still starts after `after` and runs on its own stream, so Join
// orders what follows exactly as the other two do.
class SoloDeviceComm final : public DeviceCommBase {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  void AllReduceSum(void*, size_t, Precision, cudaStream_t after) override { After(after); }
  void AllReduceSum(double*, size_t, cudaStream_t after) override { After(after); }
  void ReduceScatter(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                     cudaStream_t after) override {
    Copy(in, out, counts, fmt, after);
  }
  void AllGather(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt,
                 cudaStream_t after) override {
    Copy(in, out, counts, fmt, after);
  }
  // Synchronize and WaitEvent: no peer can hold the stream up, only this
  // GPU's own work is waited for (DeviceCommBase's).

 private:
  void Copy(const void* in, void* out, const std::vector<size_t>& counts, Precision fmt, cudaStream_t after) {
    DS_CHECK(counts.size() == 1);
    After(after);
    if (in != out && counts[0] > 0)
      DS_CUDA(cudaMemcpyAsync(out, in, counts[0] * ElementSize(fmt), cudaMemcpyDeviceToDevice, stream()));
  }
};

}  // namespace

DeviceCommKind ChooseDeviceComm(bool nccl, int world) {
  if (nccl) return DeviceCommKind::kNccl;
  return world == 1 ? DeviceCommKind::kSolo : DeviceCommKind::kStaged;
}

std::unique_ptr<DeviceComm> MakeDeviceComm(Communicator& comm) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  switch (ChooseDeviceComm(nccl != nullptr, comm.size())) {
    case DeviceCommKind::kNccl: return MakeNcclDeviceComm(*nccl);
    case DeviceCommKind::kSolo: return MakeSoloDeviceComm();
    case DeviceCommKind::kStaged: break;
  }
  return MakeStagedDeviceComm(comm);
}

std::unique_ptr<DeviceComm> MakeSoloDeviceComm() { return std::make_unique<SoloDeviceComm>(); }

std::unique_ptr<DeviceComm> MakeNcclDeviceComm(NcclCommunicator& nccl) {
  return std::make_unique<NcclDeviceComm>(nccl);
}

std::unique_ptr<DeviceComm> MakeStagedDeviceComm(Communicator& host) {
  return std::make_unique<StagedDeviceComm>(host);
}

}  // namespace ds::rt::dev
