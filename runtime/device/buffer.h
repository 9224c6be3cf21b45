// Owning handles for the device path: device memory, pinned host memory, a
// stream and an event. Move-only; each frees what it holds (errors on free
// are ignored: a failed free in a destructor has nowhere to go, and the
// context is gone anyway when it fails). Every allocation is checked
// (check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/device/check.h"

namespace ds::rt::dev {

// Where a Buffer's memory comes from: device memory, or page-locked host
// memory (what asynchronous copies between host and device need: the
// hybrid mode's staging, offload).
struct DeviceMemory {
  static void* Alloc(size_t bytes) {
    void* p = nullptr;
    DS_CUDA(cudaMalloc(&p, bytes));
    return p;
  }
  static void Free(void* p) { cudaFree(p); }
};
struct PinnedMemory {
  static void* Alloc(size_t bytes) {
    void* p = nullptr;
    DS_CUDA(cudaMallocHost(&p, bytes));
    return p;
  }
  static void Free(void* p) { cudaFreeHost(p); }
};

// n elements of T (uninitialized) in Memory's memory.
template <typename T, typename Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Resize(n); }
  Buffer(Buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      Free();
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  ~Buffer() { Free(); }

  // Reallocates for n elements (contents lost); no-op when the size is n.
  void Resize(size_t n) {
    if (n == n_) return;
    Free();
    if (n > 0) data_ = static_cast<T*>(Memory::Alloc(n * sizeof(T)));
    n_ = n;
  }
  // At least n elements, never shrinking (scratch reused for sizes that
  // vary); the contents are lost when it grows. Returns data().
  T* Reserve(size_t n) {
    if (n_ < n) Resize(n);
    return data_;
  }
  // Frees the memory (ZeRO-3 releases a gathered layer).
  void Free() {
    if (data_ != nullptr) Memory::Free(data_);
    data_ = nullptr;
    n_ = 0;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
using DeviceBuffer = Buffer<T, DeviceMemory>;
template <typename T>
using PinnedBuffer = Buffer<T, PinnedMemory>;  // element access on the host only

// A non-blocking stream (no implicit synchronization with the legacy
// default stream).
class Stream {
 public:
  Stream() { DS_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }
  void Synchronize() const { DS_CUDA(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

// An event without timing: orders work between streams (Record on one,
// Wait on another) without blocking the host.
class Event {
 public:
  Event() { DS_CUDA(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { cudaEventDestroy(e_); }
  cudaEvent_t get() const { return e_; }
  void Record(cudaStream_t s) { DS_CUDA(cudaEventRecord(e_, s)); }
  // Work queued on `s` after this waits for the recorded point.
  void MakeWait(cudaStream_t s) const { DS_CUDA(cudaStreamWaitEvent(s, e_, 0)); }
  void Synchronize() const { DS_CUDA(cudaEventSynchronize(e_)); }

 private:
  cudaEvent_t e_ = nullptr;
};

// Host <-> device copies of n elements on `s` (asynchronous for pinned host
// memory; the caller synchronizes before reading).
template <typename T>
void CopyToDevice(T* device, const T* host, size_t n, cudaStream_t s) {
  if (n > 0) DS_CUDA(cudaMemcpyAsync(device, host, n * sizeof(T), cudaMemcpyHostToDevice, s));
}
template <typename T>
void CopyToHost(T* host, const T* device, size_t n, cudaStream_t s) {
  if (n > 0) DS_CUDA(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, s));
}

}  // namespace ds::rt::dev

namespace ds::rt::dev {

// Stream-ordered scratch (cudaMallocAsync): usable by work queued on `s`
// after the call; freed in the order of whichever stream last uses it, so
// memory is reused only once that work is done.
inline void* AllocAsync(size_t bytes, cudaStream_t s) {
  void* p = nullptr;
  DS_CUDA(cudaMallocAsync(&p, std::max<size_t>(bytes, 1), s));
  return p;
}
inline void FreeAsync(void* p, cudaStream_t s) { DS_CUDA(cudaFreeAsync(p, s)); }

// Memory given back with FreeAsync stays in the current device's default
// pool for the next AllocAsync. The pool's release threshold is 0 unless
// set: every synchronize (a step's, an evaluation batch's) would hand the
// freed memory back to the driver and the next allocation map it again
// (stage 3 allocates every layer's gathered parameters and gradient per
// micro-batch). Unlimited, as PyTorch's caching allocator keeps what it
// freed; the pool is the process's, so several engines share what it holds.
inline void KeepFreedMemoryInPool() {
  int device = 0;
  DS_CUDA(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  DS_CUDA(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t threshold = UINT64_MAX;
  DS_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}

}  // namespace ds::rt::dev
