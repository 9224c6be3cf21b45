// TimedCommunicator (timed_communicator.h): every call through Timed().
#include "runtime/comm/timed_communicator.h"

namespace ds::rt {
namespace {

class TimedAllReduce final : public PersistentAllReduce {
 public:
  TimedAllReduce(TimedCommunicator& t, std::unique_ptr<PersistentAllReduce> p) : t_(t), p_(std::move(p)) {}
  void Run() override { t_.Timed([&] { p_->Run(); }); }

 private:
  TimedCommunicator& t_;
  std::unique_ptr<PersistentAllReduce> p_;
};

class TimedAllGather final : public PersistentAllGather {
 public:
  TimedAllGather(TimedCommunicator& t, std::unique_ptr<PersistentAllGather> p) : t_(t), p_(std::move(p)) {}
  void Run(const float* in, float* out) override { t_.Timed([&] { p_->Run(in, out); }); }

 private:
  TimedCommunicator& t_;
  std::unique_ptr<PersistentAllGather> p_;
};

class TimedReduceScatter final : public PersistentReduceScatter {
 public:
  TimedReduceScatter(TimedCommunicator& t, std::unique_ptr<PersistentReduceScatter> p) : t_(t), p_(std::move(p)) {}
  void Run(const float* in, float* out) override { t_.Timed([&] { p_->Run(in, out); }); }

 private:
  TimedCommunicator& t_;
  std::unique_ptr<PersistentReduceScatter> p_;
};

}  // namespace

void TimedCommunicator::AllReduceSum(float* data, size_t n) { Timed([&] { inner_.AllReduceSum(data, n); }); }
void TimedCommunicator::AllReduceSum(uint16_t* data, size_t n, Half16 format) {
  Timed([&] { inner_.AllReduceSum(data, n, format); });
}
void TimedCommunicator::AllReduceSum(double* data, size_t n) { Timed([&] { inner_.AllReduceSum(data, n); }); }

std::unique_ptr<PersistentAllReduce> TimedCommunicator::MakePersistentAllReduce(float* data, size_t n) {
  std::unique_ptr<PersistentAllReduce> p;
  Timed([&] { p = inner_.MakePersistentAllReduce(data, n); });
  return std::make_unique<TimedAllReduce>(*this, std::move(p));
}

void TimedCommunicator::ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) {
  Timed([&] { inner_.ReduceScatter(in, out, counts); });
}
void TimedCommunicator::ReduceScatter(uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                                      Half16 format) {
  Timed([&] { inner_.ReduceScatter(in, out, counts, format); });
}
void TimedCommunicator::AllGather(const float* in, float* out, const std::vector<size_t>& counts) {
  Timed([&] { inner_.AllGather(in, out, counts); });
}
void TimedCommunicator::AllGather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts) {
  Timed([&] { inner_.AllGather(in, out, counts); });
}

std::unique_ptr<PersistentAllGather> TimedCommunicator::MakePersistentAllGather(const std::vector<size_t>& counts) {
  std::unique_ptr<PersistentAllGather> p;
  Timed([&] { p = inner_.MakePersistentAllGather(counts); });
  return std::make_unique<TimedAllGather>(*this, std::move(p));
}

std::unique_ptr<PersistentReduceScatter> TimedCommunicator::MakePersistentReduceScatter(
    const std::vector<size_t>& counts) {
  std::unique_ptr<PersistentReduceScatter> p;
  Timed([&] { p = inner_.MakePersistentReduceScatter(counts); });
  return std::make_unique<TimedReduceScatter>(*this, std::move(p));
}

void TimedCommunicator::Broadcast(void* data, size_t n, int root) { Timed([&] { inner_.Broadcast(data, n, root); }); }
void TimedCommunicator::Barrier() { Timed([&] { inner_.Barrier(); }); }

}  // namespace ds::rt
