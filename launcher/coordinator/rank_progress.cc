// RankProgressView (rank_progress.h): a vector kept sorted by rank.
#include "launcher/coordinator/rank_progress.h"

#include <algorithm>

namespace ds {

void RankProgressView::Update(uint32_t node, const std::vector<RankProgress>& ranks,
                              std::chrono::steady_clock::time_point now) {
  for (RankProgress r : ranks) {
    r.node = node;
    r.heard = now;
    auto at = std::lower_bound(ranks_.begin(), ranks_.end(), r.rank,
                               [](const RankProgress& p, int32_t rank) { return p.rank < rank; });
    if (at != ranks_.end() && at->rank == r.rank) *at = r;
    else ranks_.insert(at, r);
  }
}

void RankProgressView::NewGeneration() { ranks_.clear(); }

}  // namespace ds
