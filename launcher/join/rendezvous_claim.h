// Who hosts a join-form job (PerNodeLaunch::join, per_node_launch.h): torchrun's
// c10d rule. A node hosts the rendezvous, as node 0, when the endpoint's
// address is one of this machine's and it can bind the endpoint's port
// first; binding is the test, so two nodes of one machine never both host.
// Every other node joins. --rdzv-conf is_host=true/false overrides the
// decision (true: binding must succeed). Functions are thread-safe.
#pragma once

#include "common/status.h"
#include "common/unique_fd.h"
#include "launcher/join/per_node_launch.h"

namespace ds {

// The endpoint bound and listening (close-on-exec) when this node hosts;
// an empty UniqueFd when it joins (the address is not this machine's:
// EADDRNOTAVAIL, or another process holds the port: EADDRINUSE). Errors
// name the endpoint: a name that does not resolve, is_host=true that
// cannot bind, any other bind or listen failure.
Result<UniqueFd> ClaimRendezvous(const PerNodeLaunch& p);

}  // namespace ds
