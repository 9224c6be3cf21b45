// dsagent: the per-node agent of a dslaunch job. One runs on every node; it
// connects back to the coordinator inside dslaunch, authenticates, reports
// node facts, and on Assign spawns and supervises its workers. It never
// decides policy: it reports and obeys.
//
// Command line (stable; the local, ssh and pdsh spawners build it):
//
//   dsagent --version | --help
//   dsagent --coordinator HOST:PORT --node-index N --job-id ID
//           [--bind ADDR] [--host NAME]
//           [--heartbeat-interval S] [--heartbeat-timeout S] [--connect-timeout S]
//   dsagent --coordinator HOST:PORT --step-nodes I=HOST,... --step-identity VAR --job-id ID ...
//
//   --coordinator HOST:PORT  where dslaunch's coordinator listens
//   --node-index N           this node's position in the launch plan (0-based)
//   --job-id ID              the job's id (also part of the HMAC challenge)
//   --bind ADDR              local address for the coordinator connection, the
//                            step-heartbeat socket and MASTER_PORT reservation
//                            (e.g. 127.0.0.2 so one machine hosts many nodes);
//                            default: the address that routes to the coordinator
//   --host NAME              the node's name as written in the hostfile
//                            (default: gethostname())
//   --heartbeat-interval S   Ping period (default 1s; dslaunch passes the
//                            job's elastic.heartbeat_interval)
//   --heartbeat-timeout S    coordinator silent this long = lost (default 5s)
//   --connect-timeout S      connect + handshake deadline (default 10s)
//   --join-timeout S         keep trying a coordinator that does not answer
//                            yet, once a second, until then (the per-node
//                            form: node 0 may start last; default: no retry)
//   --tree-parent N          node N's agent started this one (--fanout-tree):
//                            stdin after the key line is that agent's
//                            connection, and its end before this agent
//                            registered stops it (exit 6); once registered
//                            only the coordinator link counts
//   --step-nodes I=HOST,...  (srun, mpirun: one command line starts the agents
//                            of several nodes) the nodes of this step, each
//                            with its node index; replaces --node-index/--host
//   --secret-file PATH       where the token is, when this file exists (below)
//   --secret-via-pmi 1       MPICH's mpiexec started us: rank 0 reads the
//                            token and shares it through PMI (pmi_token.h)
//   --step-identity VAR      the variable telling which of them this agent is:
//                            a task rank (position in --step-nodes, e.g.
//                            OMPI_COMM_WORLD_RANK) or a node name
//                            (SLURMD_NODENAME)
//   Durations: 500ms, 3s, 2m or bare seconds.
//
// The agent's key (a one-time agent token dslaunch issued for this node; the
// job secret itself never leaves dslaunch) is NEVER on the command line: it is
// the first line of stdin (hex, as written by the spawner), or, when
// DSLAUNCH_SECRET_FD=N is set, the first line read from fd N. The agent closes
// that fd after reading and never logs the key. --secret-file PATH (a file of
// this user, mode 0600) comes first where it exists: mpirun's --stdin all
// gives a process on mpirun's own node a stdin that never ends.
//
// Exit codes (ds::AgentExit in agent/control/agent_exit.h): 0 the coordinator said
// Shutdown (in the per-node form: the job's exit status, which Shutdown
// carries); 2 bad command line or no secret; 3 could not connect; 4 lost the
// coordinator (connection closed or heartbeats stopped; its workers were
// killed first); 5 the coordinator refused the key (a wrong job secret);
// 6 the tree parent's connection ended before this agent registered;
// 7 a thread of the agent failed (the shard server, the snapshot tasks: on
// stderr), its workers stopped first;
// 128+S after signal S (SIGTERM/SIGINT/SIGHUP: workers are stopped first).
#include <iostream>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "common/version.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--version" || args[0] == "-v")) {
    std::cout << "dsagent " << DSLAUNCH_VERSION << "\n";  // `dslaunch check` compares it
    return 0;
  }
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << ds::AgentUsage();
    return 0;
  }
  auto opts = ds::ParseAgentArgs(args);
  if (!opts.ok()) {
    std::cerr << "dsagent: " << opts.status().message() << "\n" << ds::AgentUsage();
    return ds::ExitCode(ds::AgentExit::kUsage);
  }
  auto secret = ds::ReadAgentKey(*opts);
  if (!secret.ok()) {
    std::cerr << "dsagent: " << secret.status().message() << "\n";
    return ds::ExitCode(ds::AgentExit::kUsage);
  }
  return ds::RunAgent(*opts, *secret);
}
