#include "runtime/comm/communicator.h"

#include <cstring>

namespace ds::rt {

// --- the defaults of the persistent collectives: the one-shot calls ---------

std::unique_ptr<PersistentAllReduce> Communicator::MakePersistentAllReduce(float* data, size_t n) {
  class Plain final : public PersistentAllReduce {
   public:
    Plain(Communicator& comm, float* data, size_t n) : comm_(comm), data_(data), n_(n) {}
    void Run() override { comm_.AllReduceSum(data_, n_); }

   private:
    Communicator& comm_;
    float* data_;
    size_t n_;
  };
  return std::make_unique<Plain>(*this, data, n);
}

std::unique_ptr<PersistentAllGather> Communicator::MakePersistentAllGather(
    const std::vector<size_t>& counts) {
  class Plain final : public PersistentAllGather {
   public:
    Plain(Communicator& comm, const std::vector<size_t>& counts) : comm_(comm), counts_(counts) {}
    void Run(const float* in, float* out) override {
      mine_.assign(in, in + counts_[comm_.rank()]);  // `in` may be inside `out`
      comm_.AllGather(mine_.data(), out, counts_);
    }

   private:
    Communicator& comm_;
    std::vector<size_t> counts_;
    std::vector<float> mine_;
  };
  return std::make_unique<Plain>(*this, counts);
}

std::unique_ptr<PersistentReduceScatter> Communicator::MakePersistentReduceScatter(
    const std::vector<size_t>& counts) {
  class Plain final : public PersistentReduceScatter {
   public:
    Plain(Communicator& comm, const std::vector<size_t>& counts) : comm_(comm), counts_(counts) {}
    void Run(const float* in, float* out) override {
      size_t total = 0;
      for (size_t c : counts_) total += c;
      all_.assign(in, in + total);  // ReduceScatter clobbers its input
      comm_.ReduceScatter(all_.data(), out, counts_);
    }

   private:
    Communicator& comm_;
    std::vector<size_t> counts_;
    std::vector<float> all_;
  };
  return std::make_unique<Plain>(*this, counts);
}

// --- LocalCommunicator -------------------------------------------------------

void LocalCommunicator::ReduceScatter(float* in, float* out, const std::vector<size_t>& counts) {
  if (out != in) std::memmove(out, in, counts[0] * sizeof(float));
}
void LocalCommunicator::ReduceScatter(uint16_t* in, uint16_t* out,
                                      const std::vector<size_t>& counts, Half16) {
  if (out != in) std::memmove(out, in, counts[0] * sizeof(uint16_t));
}
void LocalCommunicator::AllGather(const float* in, float* out, const std::vector<size_t>& counts) {
  if (out != in) std::memmove(out, in, counts[0] * sizeof(float));
}
void LocalCommunicator::AllGather(const uint16_t* in, uint16_t* out,
                                  const std::vector<size_t>& counts) {
  if (out != in) std::memmove(out, in, counts[0] * sizeof(uint16_t));
}

}  // namespace ds::rt
