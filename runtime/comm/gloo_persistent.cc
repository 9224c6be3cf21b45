// GlooCommunicator's persistent collectives (gloo_communicator.h): the
// gradient allreduce, and ZeRO's per-layer all-gather and reduce-scatter, with
// Gloo's older algorithm API (buffers set up once) on the sync-mode "bulk"
// context, in pieces no larger than bulk_chunk_bytes so that blocking sends
// of two ranks to each other always fit the socket buffers.
#include <algorithm>
#include <memory>
#include <vector>

#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/reduce_scatter.h>

#include "common/check.h"
#include "runtime/comm/gloo_communicator.h"

namespace ds::rt {
namespace {

// The same sum for Gloo's older algorithm API (in place: x += y).
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("tree-vectorize")))
void AddInto(float* x, const float* y, size_t n) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}
const gloo::ReductionFunction<float> kAddInto(gloo::SUM, &AddInto);

}  // namespace

// Gloo's halving-doubling allreduce in its older API, whose buffers are set
// up once, on the sync-mode bulk context; one instance per chunk.
class GlooCommunicator::PersistentReduce final : public PersistentAllReduce {
 public:
  PersistentReduce(GlooCommunicator& comm, float* data, size_t n) : comm_(comm) {
    const size_t chunk = std::max<size_t>(1, comm.bulk_chunk_bytes_ / sizeof(float));
    comm_.Run("allreduce setup", [&] {
      for (size_t at = 0; at < n; at += chunk)
        chunks_.push_back(std::make_unique<gloo::AllreduceHalvingDoubling<float>>(
            comm.bulk_, std::vector<float*>{data + at}, static_cast<int>(std::min(chunk, n - at)),
            &kAddInto));
    });
  }
  void Run() override {
    comm_.Run("allreduce", [&] {
      for (auto& c : chunks_) c->run();
    });
  }

 private:
  GlooCommunicator& comm_;
  std::vector<std::unique_ptr<gloo::AllreduceHalvingDoubling<float>>> chunks_;
};

std::unique_ptr<PersistentAllReduce> GlooCommunicator::MakePersistentAllReduce(float* data,
                                                                              size_t n) {
  if (size_ == 1 || n == 0 || !bulk_) return Communicator::MakePersistentAllReduce(data, n);
  return std::make_unique<PersistentReduce>(*this, data, n);
}

namespace {

// A collective over per-rank `counts` done in `parts` rounds that each fit
// the staging buffer: rank q's piece (at offset(q) of the whole) is cut into
// near-equal sub-pieces, and round j moves sub-piece j of every rank.
class SubPieces {
 public:
  // `room`: the most elements of one rank a round may carry.
  SubPieces(const std::vector<size_t>& counts, size_t room) : counts_(counts), offsets_(counts.size()) {
    for (size_t q = 1; q < counts.size(); ++q) offsets_[q] = offsets_[q - 1] + counts[q - 1];
    const size_t widest = *std::max_element(counts.begin(), counts.end());
    parts_ = std::max<size_t>(1, (widest + room - 1) / room);
  }
  size_t parts() const { return parts_; }
  size_t ranks() const { return counts_.size(); }
  size_t offset(size_t q) const { return offsets_[q]; }
  // Sub-piece j of rank q: [begin, begin + len) within rank q's piece.
  size_t begin(size_t q, size_t j) const { return counts_[q] * j / parts_; }
  size_t len(size_t q, size_t j) const { return begin(q, j + 1) - begin(q, j); }
  // The longest sub-piece of round j (at least 1: Gloo wants a count >= 1).
  size_t widest(size_t j) const {
    size_t w = 1;
    for (size_t q = 0; q < ranks(); ++q) w = std::max(w, len(q, j));
    return w;
  }

 private:
  std::vector<size_t> counts_, offsets_;
  size_t parts_;
};

}  // namespace

// Gloo's ring all-gather in its older API on the sync-mode bulk context,
// which wants one count for every rank and fixed buffers: one instance per
// round, each on the shared staging buffer laid out as
// [mine | rank 0 | rank 1 | ...], every slot `widest(j)` long.
class GlooCommunicator::PersistentGather final : public PersistentAllGather {
 public:
  PersistentGather(GlooCommunicator& comm, const std::vector<size_t>& counts)
      : comm_(comm), pieces_(counts, comm.bulk_staging_.size() / (counts.size() + 1)) {
    comm_.Run("all-gather setup", [&] {
      float* staging = comm.bulk_staging_.data();
      for (size_t j = 0; j < pieces_.parts(); ++j) {
        const size_t width = pieces_.widest(j);
        rounds_.push_back(std::make_unique<gloo::AllgatherRing<float>>(
            comm.bulk_, std::vector<const float*>{staging}, staging + width,
            static_cast<int>(width)));
      }
    });
  }

  void Run(const float* in, float* out) override {
    float* staging = comm_.bulk_staging_.data();
    const int me = comm_.rank_;
    comm_.Run("all-gather", [&] {
      for (size_t j = 0; j < pieces_.parts(); ++j) {
        std::copy_n(in + pieces_.begin(me, j), pieces_.len(me, j), staging);
        rounds_[j]->run();
        for (size_t q = 0; q < pieces_.ranks(); ++q)
          std::copy_n(staging + pieces_.widest(j) * (q + 1), pieces_.len(q, j),
                      out + pieces_.offset(q) + pieces_.begin(q, j));
      }
    });
  }

 private:
  GlooCommunicator& comm_;
  SubPieces pieces_;
  std::vector<std::unique_ptr<gloo::AllgatherRing<float>>> rounds_;
};

std::unique_ptr<PersistentAllGather> GlooCommunicator::MakePersistentAllGather(
    const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  if (size_ == 1 || !bulk_) return Communicator::MakePersistentAllGather(counts);
  return std::make_unique<PersistentGather>(*this, counts);
}

// Gloo's halving-doubling reduce-scatter (older API) on the bulk context
// with equal counts: one instance per width class, shared by every persistent
// reduce-scatter of this communicator, because each instance keeps receive
// buffers about its own size (per-layer instances would add O(parameters)
// bytes to ZeRO-3's memory per rank). Widths: staging / ranks, halved down to
// 1, so padding at most doubles what a round sends; all of them together keep
// about the staging buffer's size.
struct GlooCommunicator::ScatterClass {
  size_t width;  // elements per rank
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> algo;
};

class GlooCommunicator::PersistentScatter final : public PersistentReduceScatter {
 public:
  PersistentScatter(GlooCommunicator& comm, const std::vector<size_t>& counts)
      : comm_(comm), pieces_(counts, comm.bulk_staging_.size() / counts.size()) {
    comm_.Run("reduce-scatter setup", [&] {
      if (!comm.scatter_classes_.empty()) return;
      const size_t ranks = counts.size();
      for (size_t w = comm.bulk_staging_.size() / ranks; w > 0; w /= 2)
        comm.scatter_classes_.push_back(std::make_shared<ScatterClass>(ScatterClass{
            w, std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
                   comm.bulk_, std::vector<float*>{comm.bulk_staging_.data()},
                   static_cast<int>(w * ranks), std::vector<int>(ranks, static_cast<int>(w)),
                   &kAddInto)}));
    });
  }

  void Run(const float* in, float* out) override {
    float* staging = comm_.bulk_staging_.data();
    const int me = comm_.rank_;
    const auto& classes = comm_.scatter_classes_;  // widest first
    comm_.Run("reduce-scatter", [&] {
      for (size_t j = 0; j < pieces_.parts(); ++j) {
        const size_t need = pieces_.widest(j);
        const ScatterClass& cls = **std::find_if(classes.rbegin(), classes.rend(),
                                                 [&](const auto& c) { return c->width >= need; });
        // Slot q: rank q's sub-piece; the padding after it is summed only
        // with other padding, so it needs no clearing.
        for (size_t q = 0; q < pieces_.ranks(); ++q)
          std::copy_n(in + pieces_.offset(q) + pieces_.begin(q, j), pieces_.len(q, j),
                      staging + cls.width * q);
        cls.algo->run();  // leaves this rank's slice at the front
        std::copy_n(staging, pieces_.len(me, j), out + pieces_.begin(me, j));
      }
    });
  }

 private:
  GlooCommunicator& comm_;
  SubPieces pieces_;
};

std::unique_ptr<PersistentReduceScatter> GlooCommunicator::MakePersistentReduceScatter(
    const std::vector<size_t>& counts) {
  DS_CHECK(static_cast<int>(counts.size()) == size_);
  if (size_ == 1 || !bulk_) return Communicator::MakePersistentReduceScatter(counts);
  return std::make_unique<PersistentScatter>(*this, counts);
}

}  // namespace ds::rt
