// Communicator: the collectives dstrain's ZeRO engine needs, over a fixed
// group of `size()` ranks. Every call is blocking and collective (all ranks
// call it in the same order with matching sizes) and bounded by the
// communicator's timeout.
//
// Error policy (Gloo docs/errors.md): any failure (a peer died, a timeout, a
// broken connection) throws CommError, after which this communicator is
// unusable and must be rebuilt; the caller normally exits and lets dslaunch
// restart the generation. Misuse (mismatched sizes on this rank) is a check.
// Not thread-safe: one thread drives a communicator; only Abort() may be
// called from another thread.
//
// 16-bit buffers (fp16 / bf16) are passed as uint16_t with their format, and
// are summed in fp32 then rounded back (round to nearest even).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ds::rt {

// "This communicator is unusable, rebuild it."
class CommError : public std::runtime_error {
 public:
  explicit CommError(const std::string& what) : std::runtime_error(what) {}
};

enum class Half16 { kFp16, kBf16 };

// An allreduce (sum) of one buffer that is reduced again and again at the
// same address and size, such as a gradient bucket: set up once, Run() every
// step. A backend may prepare its transport for it up front. Run() has the
// semantics and error policy of AllReduceSum(data, n).
class PersistentAllReduce {
 public:
  virtual ~PersistentAllReduce() = default;
  virtual void Run() = 0;
};

// An all-gather over the same per-rank counts again and again (a layer's
// parameters under ZeRO): set up once, Run() every step with the semantics
// and error policy of AllGather(in, out, counts). `in` may be this rank's
// own piece of `out`.
class PersistentAllGather {
 public:
  virtual ~PersistentAllGather() = default;
  virtual void Run(const float* in, float* out) = 0;
};

// A reduce-scatter over the same per-rank counts again and again (a layer's
// gradients under ZeRO-2/3): set up once, Run() with the semantics and error
// policy of ReduceScatter(in, out, counts), except that `in` is not clobbered.
class PersistentReduceScatter {
 public:
  virtual ~PersistentReduceScatter() = default;
  virtual void Run(const float* in, float* out) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::chrono::milliseconds timeout() const = 0;

  // data[0..n) becomes the element-wise sum over ranks, on every rank.
  virtual void AllReduceSum(float* data, size_t n) = 0;
  virtual void AllReduceSum(uint16_t* data, size_t n, Half16 format) = 0;
  virtual void AllReduceSum(double* data, size_t n) = 0;

  // A persistent allreduce of data[0..n) (see PersistentAllReduce). Making
  // one is collective: every rank makes the same sequence, with the same n.
  // The default runs AllReduceSum(data, n).
  virtual std::unique_ptr<PersistentAllReduce> MakePersistentAllReduce(float* data, size_t n);

  // in[0..sum(counts)) is summed over ranks; this rank receives the slice
  // [sum(counts[0..rank)), +counts[rank]) into out. `in` may be clobbered.
  virtual void ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) = 0;
  virtual void ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                             Half16 format) = 0;

  // Rank r contributes in[0..counts[r]); out[0..sum(counts)) receives all
  // contributions in rank order, on every rank.
  virtual void AllGather(const float* in, float* out, const std::vector<size_t>& counts) = 0;
  virtual void AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) = 0;

  // A persistent all-gather over `counts` (see PersistentAllGather). Making
  // one is collective like MakePersistentAllReduce. The default copies `in`
  // and runs AllGather.
  virtual std::unique_ptr<PersistentAllGather> MakePersistentAllGather(
      const std::vector<size_t>& counts);

  // A persistent reduce-scatter over `counts`; collective to make, like the
  // others. The default copies `in` and runs ReduceScatter.
  virtual std::unique_ptr<PersistentReduceScatter> MakePersistentReduceScatter(
      const std::vector<size_t>& counts);

  // bytes[0..n) of `root` are copied to every rank.
  virtual void Broadcast(void* data, size_t n, int root) = 0;

  // Returns once every rank has entered the barrier.
  virtual void Barrier() = 0;

  // Ends this rank's part in the group: a collective in flight on the
  // driving thread, and every later one, throws CommError ("... aborted") at
  // once, and the peers' collectives with this rank fail too. Safe from any
  // thread while the communicator lives, any number of times (dstrain's
  // control thread calls it for an in-place reshape). Returns false when the
  // backend cannot abort (this default): a collective in flight then runs to
  // its end or its timeout, and the caller must not wait for it.
  virtual bool Abort() { return false; }
};

// A communicator for one rank alone: every collective is a local copy. Used
// by single-process runs and as the reference in tests.
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::chrono::milliseconds timeout() const override { return std::chrono::hours(1); }
  void AllReduceSum(float*, size_t) override {}
  void AllReduceSum(uint16_t*, size_t, Half16) override {}
  void AllReduceSum(double*, size_t) override {}
  void ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) override;
  void ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                     Half16) override;
  void AllGather(const float* in, float* out, const std::vector<size_t>& counts) override;
  void AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) override;
  void Broadcast(void*, size_t, int) override {}
  void Barrier() override {}
  bool Abort() override { return true; }  // nothing ever waits for a peer
};

}  // namespace ds::rt
