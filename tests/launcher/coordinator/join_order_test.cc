// JoinOrder (launcher/coordinator/join_order.h): ranks in arrival order from
// 1, skipping ranks with an agent or a running lease; a lease that ends frees
// its rank; a lost node's rank is given again; a full job says so. No
// sockets, time passed in.
#include "launcher/coordinator/join_order.h"

#include <catch2/catch.hpp>

#include <set>

namespace ds {
namespace {

using std::chrono::seconds;

TEST_CASE("join order: ranks in arrival order, the host is 0, a full job refuses the next", "[unit]") {
  JoinOrder order(3, seconds(30));
  const Clock::time_point t0{std::chrono::hours(1)};
  std::set<int> agents;
  auto has_agent = [&](int r) { return agents.count(r) > 0; };
  CHECK(*order.Admit(t0, has_agent) == 1);
  CHECK(*order.Admit(t0, has_agent) == 2);
  // Both promised, not registered yet: ask again later.
  auto promised = order.Admit(t0, has_agent);
  CHECK(promised.status().code() == Status::Code::kUnavailable);
  CHECK(promised.status().message() == "every rank left is promised to a node that is joining; asking again");
  agents = {1, 2};
  auto full = order.Admit(t0, has_agent);
  CHECK(full.status().code() == Status::Code::kInvalidArgument);
  CHECK(full.status().message() ==
        "the job has all the nodes it takes (3 of 3, its --nnodes): no rank is left for this one");
}

TEST_CASE("join order: a rank with an agent is skipped, a lease that ends frees its rank", "[unit]") {
  JoinOrder order(4, seconds(30));
  const Clock::time_point t0{std::chrono::hours(1)};
  std::set<int> agents = {1};  // node 1's agent registered (a --node_rank node, or an earlier joiner)
  auto has_agent = [&](int r) { return agents.count(r) > 0; };
  CHECK(*order.Admit(t0, has_agent) == 2);
  CHECK(*order.Admit(t0, has_agent) == 3);
  // Rank 2's joiner died (or gave up) before its agent registered; rank 3's registered.
  agents.insert(3);
  CHECK(order.Admit(t0 + seconds(29), has_agent).status().code() == Status::Code::kUnavailable);
  CHECK(*order.Admit(t0 + seconds(30), has_agent) == 2);
  // Node 1 was lost (its agent is gone): its rank goes to the next joiner.
  agents.erase(1);
  CHECK(*order.Admit(t0 + seconds(31), has_agent) == 1);
}

}  // namespace
}  // namespace ds
