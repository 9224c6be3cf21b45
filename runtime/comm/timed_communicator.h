// TimedCommunicator: a Communicator that forwards every collective to
// another and adds the time the calling thread spent inside it to a counter,
// so that the trainer can report a step's compute time (the step's wall time
// less its time in collectives; the straggler detector compares ranks on it,
// since every data-parallel rank's step takes as long as the slowest one's).
// Only calls on the thread that made it count: with overlap_comm the
// background reductions run beside compute, and the wait for them counts as
// compute. Persistent collectives made through it are timed the same way.
// Same threading rules as Communicator; `inner` must outlive it.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/comm/communicator.h"

namespace ds::rt {

class TimedCommunicator final : public Communicator {
 public:
  explicit TimedCommunicator(Communicator& inner) : inner_(inner), owner_(std::this_thread::get_id()) {}

  // Time the owning thread spent in collectives since construction.
  std::chrono::nanoseconds in_collectives() const { return std::chrono::nanoseconds(nanos_.load()); }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::chrono::milliseconds timeout() const override { return inner_.timeout(); }
  void AllReduceSum(float* data, size_t n) override;
  void AllReduceSum(uint16_t* data, size_t n, Half16 format) override;
  void AllReduceSum(double* data, size_t n) override;
  std::unique_ptr<PersistentAllReduce> MakePersistentAllReduce(float* data, size_t n) override;
  void ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) override;
  void ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts, Half16 format) override;
  void AllGather(const float* in, float* out, const std::vector<size_t>& counts) override;
  void AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) override;
  std::unique_ptr<PersistentAllGather> MakePersistentAllGather(const std::vector<size_t>& counts) override;
  std::unique_ptr<PersistentReduceScatter> MakePersistentReduceScatter(const std::vector<size_t>& counts) override;
  void Broadcast(void* data, size_t n, int root) override;
  void Barrier() override;
  bool Abort() override { return inner_.Abort(); }  // any thread, as the inner one's

  // Runs f, adding its duration to the counter when called on the owner.
  template <typename F>
  void Timed(F&& f) {
    if (std::this_thread::get_id() != owner_) return f();
    const auto start = std::chrono::steady_clock::now();
    struct Add {  // counts also when f throws CommError
      std::atomic<int64_t>& n;
      std::chrono::steady_clock::time_point start;
      ~Add() { n += (std::chrono::steady_clock::now() - start).count(); }
    } add{nanos_, start};
    f();
  }

 private:
  Communicator& inner_;
  const std::thread::id owner_;
  std::atomic<int64_t> nanos_{0};
};

}  // namespace ds::rt
