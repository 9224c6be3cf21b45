// dsagent's command line (documented for users in main.cc): the options
// struct, the parser and, for an agent a step launcher started, finding
// which node this is and which variables belong to the step's task. Pure
// functions of their arguments; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/defaults.h"
#include "common/status.h"

namespace ds {

struct AgentOptions {
  std::string coordinator;          // --coordinator HOST:PORT (required)
  int node_index = -1;              // --node-index N (required)
  std::string job_id;               // --job-id ID (required)
  std::string bind_addr;            // --bind ADDR; "" = the address that routes to the coordinator
  std::string host;                 // --host NAME; "" = gethostname()
  double heartbeat_interval = kDefaultHeartbeatInterval;  // --heartbeat-interval S: Ping period
  double heartbeat_timeout = kDefaultHeartbeatTimeout;    // --heartbeat-timeout S: coordinator silent this long = lost
  double connect_timeout = kDefaultConnectTimeout;      // --connect-timeout S: connect + handshake
  double join_timeout = 0;          // --join-timeout S: retry an unreachable coordinator until then
  double coordinator_grace = 0;     // --coordinator-grace S: a lost coordinator's workers run on this long
  // An agent a step launcher (srun, mpirun) started on several nodes with one
  // command line: --step-nodes I=HOST,... lists them, --step-identity VAR
  // names the variable that says which one this is (StepNode).
  std::vector<std::pair<int, std::string>> step_nodes;
  std::string step_identity;
  std::string secret_file;          // --secret-file PATH: where the token may be instead (ReadAgentSecret)
  bool secret_via_pmi = false;      // --secret-via-pmi: MPICH's mpiexec started us (ReadAgentKey)
  // --tree-parent N: node N's agent started us (--fanout-tree); stdin, after
  // the key, is its connection: its end before we registered stops us.
  int tree_parent = -1;
};

// Which of `step_nodes` this agent is, from the value of its step identity
// variable: a task rank (an integer: the position in the list; mpirun's
// OMPI_COMM_WORLD_RANK, mpiexec's PMI_RANK) or a node name (Slurm's
// SLURMD_NODENAME: the entry with that host). Sets node_index and host.
// InvalidArgument names the variable and the value when neither matches.
Status ResolveStepNode(AgentOptions& o, const std::optional<std::string>& identity);

// A variable the step launcher set for the agent's own task (SLURM_PROCID,
// SLURM_NTASKS, SLURM_STEP_*, OMPI_*, PMI_*, PMIX_*, ...): it describes the
// one-task-per-node step, not the workers, and frameworks that read it
// (Lightning's SLURMEnvironment, MPI_Init) would take the agent's rank for
// the worker's. A step agent keeps these out of its workers' environment;
// the job-level ones (SLURM_JOB_ID, SLURM_JOB_NODELIST, ...) stay.
bool IsStepTaskVariable(const std::string& name);

// Parses argv (without the program name). InvalidArgument names the flag:
// "--node-index: expected a non-negative integer, got 'x'".
Result<AgentOptions> ParseAgentArgs(const std::vector<std::string>& args);
std::string AgentUsage();

}  // namespace ds
