// MpirunSpawner: `--launcher openmpi`, for sites where mpirun is the
// sanctioned way onto the nodes. Starts every agent with ONE run of Open
// MPI's mpirun (one process per node: --host h0,h1,... --map-by node), with
// one dsagent command line (launcher/spawn/step_command.h; each agent finds
// its node by OMPI_COMM_WORLD_RANK, rank i being host i). The agent token
// reaches every process on stdin (--stdin all), never argv or the
// environment; Open MPI 4.1 gives a process on mpirun's own node a stdin
// that never delivers with --stdin all, so that one reads it from a private
// file (a 0700 folder, mode 0600, removed with the spawner) named by
// --secret-file.
// mpirun reaches the nodes with its own ssh (plm_rsh_agent);
// the ssh config file (DSLAUNCH_SSH_CONFIG) and port are passed to it, and
// --launcher_args go after our options (DeepSpeed's pass-through).
// Limits, documented (docs/mpi.md): mpirun reports no host's end by name,
// so every handle ends when mpirun does (an agent's own end reaches the
// coordinator as a closed link); a lost node ends mpirun and with it every
// agent (Open MPI aborts the job when it loses a daemon), so an elastic job
// restarts only from agents started again; one host cannot be stopped alone.
// MPICH's mpiexec (hydra) gives stdin to rank 0 only, so the token has no
// safe way to the other agents: --launcher mpich is refused with that reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"
#include "launcher/spawn/tool_group.h"

namespace ds {

struct MpirunOptions {
  std::string mpirun_path = "mpirun";   // a name looked up on PATH, or a path
  SshOptions ssh;                       // config_file, default_port, forward_env, stop_grace
  bool as_root = false;                 // running as root: mpirun refuses unless told it is meant
  std::vector<std::string> extra_args;  // --launcher_args
};

class MpirunSpawner : public Spawner {
 public:
  explicit MpirunSpawner(MpirunOptions options) : options_(std::move(options)) {}
  ~MpirunSpawner() override;  // removes the token files
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;

 private:
  Result<ToolGroupSpec> Prepare(const std::vector<AgentSpec>& specs);
  MpirunOptions options_;
  std::vector<std::string> token_dirs_;
};

// mpirun's command line for `specs` with `agent_argv`. Exposed for tests.
std::vector<std::string> MpirunArgv(const MpirunOptions& o, const std::vector<AgentSpec>& specs,
                                    const std::vector<std::string>& agent_argv);

}  // namespace ds
