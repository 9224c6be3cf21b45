#include "runtime/train_data.h"

namespace ds::rt {
namespace {

// Samples [lo, hi) of `all` as a data set of their own.
Dataset Slice(const Dataset& all, int64_t lo, int64_t hi) {
  Dataset s;
  s.n = hi - lo;
  s.features = all.features;
  s.classes = all.classes;
  s.x.assign(all.x.begin() + lo * all.features, all.x.begin() + hi * all.features);
  s.y.assign(all.y.begin() + lo, all.y.begin() + hi);
  return s;
}

}  // namespace

Result<TrainTestData> LoadTrainTestData(const DataSection& d) {
  TrainTestData out;
  if (d.dataset == "synthetic") {
    Dataset all = MakeSynthetic(d.synthetic);
    const int64_t n_test = all.n / 6, n_train = all.n - n_test;
    out.train = Slice(all, 0, n_train);
    out.test = Slice(all, n_train, all.n);
    return out;
  }
  DS_ASSIGN_OR_RETURN(out.train, LoadFashionMnist(d.path, true, d.normalize));
  DS_ASSIGN_OR_RETURN(out.test, LoadFashionMnist(d.path, false, d.normalize));
  return out;
}

}  // namespace ds::rt
