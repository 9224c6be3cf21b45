#include "launcher/coordinator/join_order.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {

JoinOrder::JoinOrder(int max_nodes, Clock::duration lease)
    : max_nodes_(max_nodes), lease_(lease), leased_until_(static_cast<size_t>(std::max(max_nodes, 1))) {}

Result<int> JoinOrder::Admit(Clock::time_point now, const std::function<bool(int rank)>& has_agent) {
  bool leased = false;
  for (int rank = 1; rank < max_nodes_; ++rank) {
    if (has_agent(rank)) continue;
    if (now < leased_until_[rank]) {
      leased = true;
      continue;
    }
    leased_until_[rank] = now + lease_;
    return rank;
  }
  if (leased)
    return Status::Unavailable("every rank left is promised to a node that is joining; asking again");
  return Status::InvalidArgument(
      fmt::format("the job has all the nodes it takes ({} of {}, its --nnodes): no rank is left for this one",
                  max_nodes_, max_nodes_));
}

}  // namespace ds
