// The per-node launch form (torchrun's model; DeepSpeed's --no_ssh; every
// pod of a Kubeflow PyTorchJob): every node runs the same dslaunch command.
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
// may join and anyone who binds the port first may command the nodes. From
// the rendezvous address every node derives the same job id, and from the
// secret each node's own agent key: no key is a value another user can
// compute unless --insecure is given.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/rdzv_conf.h"

namespace ds {

inline constexpr int kDefaultRendezvousPort = 29500;  // torchrun's and DeepSpeed's
inline constexpr double kPerNodeJoinTimeout = 600.0;  // seconds for every node to join (torchrun's default)

struct PerNodeLaunch {
  int nnodes = 0;          // the node count; with join, MAX of --nnodes MIN:MAX
  int node_rank = 0;       // -1 with join until this node hosts (0) or was given its rank
  // Ranks given at join (torchrun's c10d recipe: --rdzv-endpoint and no
  // --node_rank): the node that can bind the endpoint hosts the job as node
  // 0 (rendezvous_claim.h); the others join it (join_client.h).
  bool join = false;
  int min_nodes = 0;       // with join: MIN of --nnodes MIN:MAX, else nnodes
  RendezvousConf conf;     // with join: --rdzv-conf (join_timeout, last_call_timeout, is_host)
  int listen_fd = -1;      // with join, on the host: the bound, listening endpoint (the coordinator takes it)
  std::string addr;        // node 0's rendezvous address
  int port = kDefaultRendezvousPort;
  std::string source;      // what asked for it: "--node_rank", "PET_* variables", ...
  std::string notice;      // said once when the form was entered from ambient variables, else ""
  enum class Secret {
    kFile,      // DSLAUNCH_SECRET_FILE
    kLoopback,  // node 0 makes and publishes it (loopback_secret.h); other nodes read it before joining
    kInsecure,  // --insecure: a constant; nothing is authenticated in either direction
  } secret_from = Secret::kFile;
  std::string secret;      // the shared job secret ("" on nodes > 0 until read, for kLoopback)
  std::string job_id;      // derived from the rendezvous: the same on every node
};

// Node `node`'s agent key: HMAC(secret, "dslaunch per-node agent <job id> <node>").
std::string PerNodeAgentToken(const PerNodeLaunch& p, int node);
// The join key a node without a rank proves to get one, and the host proves
// back (mutual): HMAC(secret, "dslaunch per-node join <job id>").
std::string PerNodeJoinToken(const PerNodeLaunch& p);

// The address node 0's coordinator listens on: exactly the rendezvous
// address ("localhost" -> 127.0.0.1; a name -> the address it resolves to),
// never every interface. InvalidArgument when the name does not resolve.
Result<std::string> PerNodeListenAddress(const PerNodeLaunch& p);

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

// The first line of `path` if it is a regular file of this user that nobody
// else may read or write (mode 0600 or stricter) and holds at least 16
// characters; else an error saying which of these fails.
Result<std::string> ReadSecretFile(const std::string& path);

}  // namespace ds
