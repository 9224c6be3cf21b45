// What the launcher asks of hosts over SSH before it starts agents, the
// libssh side of `dslaunch check` included (MeasureClockSkew), so that no
// code outside launcher/spawn/ssh/ speaks libssh.
// Elastic start: "by default the job does not start when any host
// fails preflight; with an elastic min_nodes it starts on the reachable ones".
// RunJob probes the plan's nodes over SSH *before* it builds the coordinator
// (which holds the plan and expects every node of it to register), rebuilds
// the plan on the hosts that answered with the pure MakePlan, and only then
// starts agents and assigns ranks. A host that passes the probe and fails a
// moment later at Start fails the job as without min_nodes.
// Thread-safe: no shared state.
#pragma once

#include <utility>
#include <vector>

#include "common/status.h"
#include "launcher/config/plan.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// True when the job file set elastic.min_nodes below the number of nodes:
// only then may the job start on fewer hosts than planned.
bool ElasticStartAllowed(const LaunchPlan& plan);

// Connects to every node (host key check and authentication, as the spawner
// will), at most options.fanout at once. One Status per node, in order;
// errors start with the host and keep ssh's reason ("n2: connection refused").
std::vector<Status> ProbeNodes(const std::vector<NodePlan>& nodes, const SshOptions& options);

// Every node's address (the hostfile's addr=, else its ssh HostName), looked
// up at most options.fanout at once. OK, or InvalidArgument naming every
// node that does not resolve with the resolver's reason: "2 hosts do not
// resolve: n3 (Name or service not known), n7 (...)".
Status CheckNodesResolve(const std::vector<NodePlan>& nodes, const SshOptions& options);

// Remote clock minus local clock over an open session, and its uncertainty
// (half the best of 3 round trips), in seconds: a remote loop answers each
// line with its time, so the cost of starting a command does not count.
// IOError naming the host when the channel or `date` fails.
Result<std::pair<double, double>> MeasureClockSkew(SshSession& session);

}  // namespace ds
