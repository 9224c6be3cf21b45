// The per-node launch form from the command line (torchrun's model;
// DeepSpeed's --no_ssh; every pod of a Kubeflow PyTorchJob): every node runs
// the same dslaunch command. What the form is made of (the node's
// PerNodeLaunch, its keys, who hosts, the join, the loopback secret, node
// 0's spawner) is launcher/join/; this file turns CliOptions into a
// PerNodeLaunch and execs this node's agent.
// Node rank 0 runs the coordinator (on the rendezvous port) and its own
// agent; every other node runs only its agent, which registers with node 0
// and is told what to run (docs/per-node.md).
//
// Asked for by, highest first:
//   --node_rank R (or --no_ssh) with --nnodes N and --master_addr/--master_port
//     or --rdzv-endpoint HOST:PORT;
//   no --node_rank, --nnodes N or MIN:MAX above 1 and --rdzv-endpoint
//     HOST:PORT (or --master_addr/--master_port with --rdzv-backend c10d):
//     torchrun's c10d recipe, ranks given at join (`join`);
//   PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT (torchrun's
//     variables, as Kubeflow's PyTorchJob sets them);
//   MASTER_ADDR, MASTER_PORT, WORLD_SIZE (nodes), RANK (this node) when all
//     four are set and this is not a dslaunch or torchrun worker (no
//     TORCHELASTIC_RUN_ID) - PyTorchJob's plain form.
// The job secret comes from DSLAUNCH_SECRET_FILE (a file of this user, mode
// 0600; the same on every node), never the command line. Without one, a
// loopback rendezvous (every node on this machine) gets a random secret that
// node 0 publishes in this user's private directory (loopback_secret.h);
// anywhere else it is an error unless --insecure says, loudly, that anyone
// may join and anyone who binds the port first may command the nodes (keys:
// launcher/join/per_node_launch.h).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/join/per_node_launch.h"

namespace ds {

// nullopt when neither the command line nor `env` asks for the per-node
// form. Reads DSLAUNCH_SECRET_FILE (from `env`) with ReadSecretFile. Errors
// name the flag or variable and what was expected.
Result<std::optional<PerNodeLaunch>> ResolvePerNode(const CliOptions& cli, const KeyValues& env);

// Node rank R > 0: reads the secret node 0 publishes when it is kLoopback
// and not read yet (waiting for it), then becomes this node's dsagent (exec, same pid), which joins
// node 0 within kPerNodeJoinTimeout (node 0 may start later) and runs what
// it is told; its exit status is this command's (agent/main.cc: the job's
// status when node 0 ended the job, 4 when node 0 was lost, 5 when node 0 refused the secret). The
// job's heartbeat settings come from the job file, as on node 0. Returns
// only when the agent cannot be started.
Status ExecPerNodeAgent(const PerNodeLaunch& p, const CliOptions& cli);

// A node that does not host a join-form job: waits for a loopback secret
// (kLoopback), joins (JoinRendezvous, launcher/join/join_client.h), then
// becomes its node's dsagent (ExecPerNodeAgent). Returns only on an error.
Status JoinAndExecAgent(PerNodeLaunch p, const CliOptions& cli);

}  // namespace ds
