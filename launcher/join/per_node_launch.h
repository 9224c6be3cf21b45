// PerNodeLaunch: one node's part of a per-node job (every node runs the same
// dslaunch command; torchrun's model), as resolved from the command line
// (launcher/cmd/per_node.h), and the keys every node derives from it. Node
// rank 0 hosts the coordinator on the rendezvous port; the other nodes run
// only their agent, which registers with node 0 (docs/per-node.md).
// The job secret comes from DSLAUNCH_SECRET_FILE (ReadSecretFile; the same
// file on every node), from node 0 on loopback (loopback_secret.h), or is a
// constant under --insecure. From the rendezvous address every node derives
// the same job id, and from the secret each node's own agent key and the
// join key: no key is a value another user can compute unless --insecure is
// given. Plain data and pure functions (PerNodeListenAddress resolves a name).
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/join/rdzv_conf.h"

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

// The job id every node derives from the rendezvous `endpoint`
// ("HOST:PORT") and --rdzv-id (may be ""): 12 hex characters.
std::string PerNodeJobId(const std::string& endpoint, const std::string& rdzv_id);

// Node `node`'s agent key: HMAC(secret, "dslaunch per-node agent <job id> <node>").
std::string PerNodeAgentToken(const PerNodeLaunch& p, int node);
// The join key a node without a rank proves to get one, and the host proves
// back (mutual): HMAC(secret, "dslaunch per-node join <job id>").
std::string PerNodeJoinToken(const PerNodeLaunch& p);

// The address node 0's coordinator listens on: exactly the rendezvous
// address ("localhost" -> 127.0.0.1; a name -> the address it resolves to),
// never every interface. InvalidArgument when the name does not resolve.
Result<std::string> PerNodeListenAddress(const PerNodeLaunch& p);

// The first line of `path` if it is a regular file of this user that nobody
// else may read or write (mode 0600 or stricter) and holds at least 16
// characters; else an error saying which of these fails.
Result<std::string> ReadSecretFile(const std::string& path);

}  // namespace ds
