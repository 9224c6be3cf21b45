#include "launcher/cmd/per_node.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/duration.h"
#include "common/strings.h"
#include "common/subprocess.h"
#include "launcher/cmd/plan_from_cli.h"
#include "launcher/cmd/spawner_choice.h"
#include "launcher/join/join_client.h"
#include "launcher/join/loopback_secret.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

constexpr int kDefaultJoinPort = 29400;  // torchrun's c10d rendezvous port

std::optional<std::string> Get(const KeyValues& env, const std::string& name) {
  for (const auto& [k, v] : env)
    if (k == name && !v.empty()) return v;
  return std::nullopt;
}

Result<int> Number(const std::string& what, const std::string& text, int lo, int hi) {
  auto v = ParseInt(text);
  if (!v || *v < lo || *v > hi)
    return Status::InvalidArgument(
        fmt::format("{}: expected an integer between {} and {}, got '{}'", what, lo, hi, text));
  return static_cast<int>(*v);
}

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr == "::1" || StartsWith(addr, "127.");
}

// Node 0's address and the port from --rdzv-endpoint HOST:PORT, else
// --master_addr/--master_port (port 29500 by default).
Status Endpoint(const CliOptions& cli, PerNodeLaunch& p) {
  p.addr = cli.master_addr;
  p.port = cli.master_port > 0 ? cli.master_port : kDefaultRendezvousPort;
  if (cli.rdzv_endpoint.empty()) return Status::OK();
  const size_t colon = cli.rdzv_endpoint.rfind(':');
  p.addr = cli.rdzv_endpoint.substr(0, colon);
  if (colon == std::string::npos) return Status::OK();
  DS_ASSIGN_OR_RETURN(p.port, Number("--rdzv-endpoint", cli.rdzv_endpoint.substr(colon + 1), 1, 65535));
  return Status::OK();
}

// torchrun's c10d recipe: the same command on every node, ranks given at join.
Status ResolveJoin(const CliOptions& cli, PerNodeLaunch& p) {
  p.source = cli.rdzv_endpoint.empty() ? "--master_addr with --rdzv-backend c10d" : "--rdzv-endpoint";
  p.join = true;
  p.node_rank = -1;
  p.nnodes = cli.elastic_max_nodes > 0 ? cli.elastic_max_nodes : cli.selection.num_nodes;
  p.min_nodes = cli.elastic_min_nodes > 0 ? cli.elastic_min_nodes : p.nnodes;
  p.conf = cli.rdzv_conf;
  DS_RETURN_IF_ERROR(Endpoint(cli, p));
  if (!cli.rdzv_endpoint.empty() && cli.rdzv_endpoint.find(':') == std::string::npos)
    p.port = kDefaultJoinPort;  // torchrun's c10d default, for --rdzv-endpoint HOST
  if (p.addr.empty())
    return Status::InvalidArgument(fmt::format("{}: expected HOST:PORT, got '{}'", p.source, cli.rdzv_endpoint));
  return Status::OK();
}

}  // namespace

Result<std::optional<PerNodeLaunch>> ResolvePerNode(const CliOptions& cli, const KeyValues& env) {
  PerNodeLaunch p;
  if (cli.rdzv_join) {
    DS_RETURN_IF_ERROR(ResolveJoin(cli, p));
  } else if (cli.node_rank >= 0 || cli.no_ssh) {
    p.source = cli.node_rank >= 0 ? "--node_rank" : "--no_ssh";
    if (cli.node_rank < 0) return Status::InvalidArgument("--no_ssh: needs --node_rank R (this node's rank)");
    if (cli.elastic_max_nodes > 0)
      return Status::InvalidArgument("--node_rank: expected a fixed --nnodes N, not MIN:MAX");
    if (cli.selection.num_nodes <= 0)
      return Status::InvalidArgument("--node_rank: needs --nnodes N (how many nodes run this command)");
    p.nnodes = cli.selection.num_nodes;
    p.node_rank = cli.node_rank;
    DS_RETURN_IF_ERROR(Endpoint(cli, p));
    if (p.addr.empty())
      return Status::InvalidArgument("--node_rank: needs node 0's address (--master_addr or --rdzv-endpoint HOST:PORT)");
  } else if (Get(env, "PET_NODE_RANK") && Get(env, "PET_NNODES")) {
    p.source = "PET_NNODES/PET_NODE_RANK";
    DS_ASSIGN_OR_RETURN(p.nnodes, Number("PET_NNODES", *Get(env, "PET_NNODES"), 1, 1 << 20));
    DS_ASSIGN_OR_RETURN(p.node_rank, Number("PET_NODE_RANK", *Get(env, "PET_NODE_RANK"), 0, (1 << 20) - 1));
    p.addr = Get(env, "PET_MASTER_ADDR").value_or(Get(env, "MASTER_ADDR").value_or(""));
    if (auto port = Get(env, "PET_MASTER_PORT").value_or(Get(env, "MASTER_PORT").value_or("")); !port.empty()) {
      DS_ASSIGN_OR_RETURN(p.port, Number("PET_MASTER_PORT", port, 1, 65535));
    }
    if (p.addr.empty()) return Status::InvalidArgument("PET_NODE_RANK is set but neither PET_MASTER_ADDR nor MASTER_ADDR");
  } else if (Get(env, "MASTER_ADDR") && Get(env, "MASTER_PORT") && Get(env, "WORLD_SIZE") && Get(env, "RANK") &&
             !Get(env, "TORCHELASTIC_RUN_ID") && cli.hostfile.empty()) {
    p.source = "MASTER_ADDR/MASTER_PORT/WORLD_SIZE/RANK";
    DS_ASSIGN_OR_RETURN(p.nnodes, Number("WORLD_SIZE (nodes)", *Get(env, "WORLD_SIZE"), 1, 1 << 20));
    DS_ASSIGN_OR_RETURN(p.node_rank, Number("RANK (this node)", *Get(env, "RANK"), 0, (1 << 20) - 1));
    p.addr = *Get(env, "MASTER_ADDR");
    DS_ASSIGN_OR_RETURN(p.port, Number("MASTER_PORT", *Get(env, "MASTER_PORT"), 1, 65535));
    p.notice = fmt::format(
        "MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK are set and no --hostfile is given: running the per-node form "
        "(Kubeflow PyTorchJob's plain form) as node {} of {}, node 0 at {}:{}; give --hostfile, or unset them, to "
        "launch every node from here",
        p.node_rank, p.nnodes, p.addr, p.port);
  } else {
    return std::optional<PerNodeLaunch>();
  }
  if (!p.join && p.node_rank >= p.nnodes)
    return Status::InvalidArgument(fmt::format("{}: node rank {} is not below the node count {}", p.source,
                                               p.node_rank, p.nnodes));
  if (auto file = Get(env, "DSLAUNCH_SECRET_FILE")) {
    DS_ASSIGN_OR_RETURN(p.secret, ReadSecretFile(*file));
  } else if (cli.insecure) {
    p.secret_from = PerNodeLaunch::Secret::kInsecure;
    p.secret = "dslaunch per-node insecure";
  } else if (IsLoopback(p.addr)) {
    p.secret_from = PerNodeLaunch::Secret::kLoopback;
    if (p.node_rank == 0 || p.join) p.secret = RandomHex(32);  // used if this node hosts
  } else {
    return Status::PermissionDenied(fmt::format(
        "the per-node form ({}) needs the job secret in DSLAUNCH_SECRET_FILE (the same file on every node, mode "
        "0600) when node 0 ({}) is not on loopback; --insecure lets anyone who reaches {}:{} join",
        p.source, p.addr, p.addr, p.port));
  }
  p.job_id = PerNodeJobId(fmt::format("{}:{}", p.addr, p.port), cli.rdzv_id);
  return std::optional<PerNodeLaunch>(std::move(p));
}

namespace {

// What starts a line of ours on stderr: on a terminal, erase the row first:
// another dslaunch there (node 0 in the same terminal) may have its status
// line on it, which our line would otherwise continue.
const char* RowStart() { return ::isatty(STDERR_FILENO) ? "\r\033[K" : ""; }

}  // namespace

Status ExecPerNodeAgent(const PerNodeLaunch& p, const CliOptions& cli) {
  DS_ASSIGN_OR_RETURN(JobSpec job, JobFromCli(cli));
  const std::string endpoint = fmt::format("{}:{}", p.addr, p.port);
  PerNodeLaunch keyed = p;
  if (p.secret_from == PerNodeLaunch::Secret::kLoopback && p.secret.empty()) {
    DS_ASSIGN_OR_RETURN(keyed.secret, AwaitLoopbackSecret(endpoint, kPerNodeJoinTimeout, [&](const std::string& path) {
      std::fprintf(stderr, "%sdslaunch: node %d of %d: waiting for node 0 to publish the job secret in %s\n",
                   RowStart(), p.node_rank, p.nnodes, path.c_str());
    }));
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::vector<std::string> argv =
      AgentArgv(cli, endpoint, p.node_rank, p.job_id, host,
                job.elastic.heartbeat_interval, job.elastic.heartbeat_timeout, cli.connect_timeout);
  argv.insert(argv.end(), {"--join-timeout", fmt::format("{}ms", ToMillis(p.join ? p.conf.join_timeout
                                                                                 : kPerNodeJoinTimeout))});
  // The key on a pipe the agent reads once (DSLAUNCH_SECRET_FD): never argv or the environment.
  int fds[2];
  if (::pipe(fds) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  const std::string line = PerNodeAgentToken(keyed, p.node_rank) + "\n";
  if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  ::close(fds[1]);
  ::setenv("DSLAUNCH_SECRET_FD", std::to_string(fds[0]).c_str(), 1);
  std::fprintf(stderr, "%sdslaunch: node %d of %d (%s): joining node 0 at %s:%d as this node's agent\n", RowStart(),
               p.node_rank, p.nnodes, p.source.c_str(), p.addr.c_str(), p.port);
  std::fflush(stderr);
  const CStringArray args(argv);
  CloseOnExecAboveStderr({fds[0]});  // the key's pipe is passed on purpose; nothing else of ours is
  ::execv(args.data()[0], args.data());
  const int err = errno;
  ::close(fds[0]);
  return Status::NotFound(fmt::format("cannot run dsagent at {}: {}", argv[0], std::strerror(err)));
}

Status JoinAndExecAgent(PerNodeLaunch p, const CliOptions& cli) {
  const std::string endpoint = fmt::format("{}:{}", p.addr, p.port);
  if (p.secret_from == PerNodeLaunch::Secret::kLoopback) {
    DS_ASSIGN_OR_RETURN(p.secret, AwaitLoopbackSecret(endpoint, p.conf.join_timeout, [&](const std::string& path) {
      std::fprintf(stderr, "dslaunch: waiting for the node hosting %s to publish the job secret in %s\n",
                   endpoint.c_str(), path.c_str());
    }));
  }
  DS_ASSIGN_OR_RETURN(p.node_rank, JoinRendezvous(p, [](const std::string& line) {
                        std::fprintf(stderr, "dslaunch: %s\n", line.c_str());
                      }));
  std::fprintf(stderr, "dslaunch: job %s: joined %s as node %d of at most %d\n", p.job_id.c_str(), endpoint.c_str(),
               p.node_rank, p.nnodes);
  return ExecPerNodeAgent(p, cli);
}

}  // namespace ds
