// The joining side of a join-form job (PerNodeLaunch::join, per_node_launch.h): a
// node that does not host the rendezvous asks the host for its node rank,
// then becomes that node's agent (ExecPerNodeAgent, launcher/cmd/per_node.h,
// which calls JoinRendezvous from JoinAndExecAgent). The join connection
// authenticates both ways with the join key (PerNodeJoinToken): the node
// takes a rank only from a host that proved the job's secret, and its agent
// then runs only what a coordinator holding that node's own key sends.
// Blocking; thread-safe.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "launcher/join/per_node_launch.h"

namespace ds {

// Joins `p`'s rendezvous (its secret known): connects, trying again once a
// second while nobody listens there, until p.conf.join_timeout; returns the
// node rank the host gave. `say` hears one line when the first try fails
// (waiting for the host). Errors name the endpoint and what was tried:
// nobody answered within the timeout (Unavailable), the host refused the
// join key or failed to prove it (PermissionDenied: another secret, or
// another job's rendezvous), the host had no rank left (Unavailable).
Result<int> JoinRendezvous(const PerNodeLaunch& p, const std::function<void(const std::string&)>& say);

}  // namespace ds
