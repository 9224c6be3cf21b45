// JoinOrder: the node ranks of the per-node form's join (torchrun's c10d
// recipe, launcher/cmd/per_node.h): the coordinator's own node is rank 0,
// and each node that joins gets the lowest rank that has no agent and is
// not promised to another joiner, in arrival order. A rank given out is
// held (leased) for `lease` for that node's agent to register; a joiner that
// dies before its agent registers frees its rank when the lease ends. A rank
// whose agent was lost is given again (an elastic job's returning node).
// Pure and not thread-safe (the coordinator's io thread); time is passed in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ds {

class JoinOrder {
 public:
  // `max_nodes`: the job's --nnodes (MAX of MIN:MAX), rank 0 included.
  JoinOrder(int max_nodes, Clock::duration lease);

  // The rank of a node joining at `now`: the lowest of 1..max_nodes-1 for
  // which `has_agent(rank)` is false and no lease runs; its lease starts
  // now. Errors: InvalidArgument when every rank has an agent (names how
  // many); Unavailable when the ranks left are leased (a joiner that gave
  // up before reading its rank leaves one): asking again after the lease
  // may succeed.
  Result<int> Admit(Clock::time_point now, const std::function<bool(int rank)>& has_agent);

 private:
  int max_nodes_;
  Clock::duration lease_;
  std::vector<Clock::time_point> leased_until_;  // by rank; time_point{} = never leased
};

}  // namespace ds
