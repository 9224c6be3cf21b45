// MpirunSpawner: `--launcher openmpi` and `--launcher mpich`, for sites where
// mpirun is the sanctioned way onto the nodes. Starts every agent with ONE
// run of the MPI launcher, one process per node (rank i on host i), with one
// dsagent command line (launcher/spawn/step_command.h; each agent finds its
// node by its rank).
//   Open MPI: mpirun --host h0,h1,... -np N --map-by node --bind-to none
//     --stdin all; identity OMPI_COMM_WORLD_RANK. The token reaches every
//     process on stdin; Open MPI 4.1 gives a process on mpirun's own node a
//     stdin that never delivers, so that one reads it from a private file
//     (a 0700 folder, mode 0600, removed with the spawner) named by
//     --secret-file. Our ssh config and port go in plm_rsh_args.
//   MPICH: mpiexec (hydra) -hosts h0,h1,... -n N -ppn 1 -launcher ssh;
//     identity PMI_RANK. Hydra gives stdin to rank 0 only: rank 0 shares the
//     token with the others through the job's PMI key-value space
//     (--secret-via-pmi, agent/pmi_token.h). Our ssh config and port go in
//     a private ssh wrapper (-launcher-exec).
// Never argv or the environment. --launcher_args go after our options
// (DeepSpeed's pass-through). One agent's exit does not make the launcher
// kill the others (-disable-auto-cleanup, orte_abort_on_non_zero_status 0):
// each stops its own workers when it loses the coordinator, which decides.
// Limits, documented (docs/mpi.md): the launcher reports no host's end by
// name, so every handle ends when it does (an agent's own end reaches the
// coordinator as a closed link); a lost node ends the whole run and with it
// every agent, so an elastic job cannot go on with the survivors; one host
// cannot be stopped alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"
#include "launcher/spawn/tool_group.h"

namespace ds {

enum class MpiFlavor { kOpenMpi, kMpich };

struct MpirunOptions {
  MpiFlavor flavor = MpiFlavor::kOpenMpi;
  // "" = the flavour's own name on PATH (mpirun.openmpi, else mpirun;
  // mpiexec.hydra, else mpiexec.mpich, else mpiexec); else a name or a path.
  std::string mpirun_path;
  SshOptions ssh;                       // config_file, default_port, forward_env, stop_grace
  bool as_root = false;                 // running as root: Open MPI refuses unless told it is meant
  std::vector<std::string> extra_args;  // --launcher_args
};

class MpirunSpawner : public Spawner {
 public:
  explicit MpirunSpawner(MpirunOptions options) : options_(std::move(options)) {}
  ~MpirunSpawner() override;  // removes the private folders (token file, ssh wrapper)
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;
  bool SharesPayload() const override { return true; }  // one run, one stdin for its agents

 private:
  Result<ToolGroupSpec> Prepare(const std::vector<AgentSpec>& specs);
  MpirunOptions options_;
  std::vector<std::string> private_dirs_;
};

// The launcher's command line for `specs` with `agent_argv`; `ssh_wrapper`
// (MPICH only, "" = none) is hydra's -launcher-exec. Exposed for tests.
std::vector<std::string> MpirunArgv(const MpirunOptions& o, const std::vector<AgentSpec>& specs,
                                    const std::vector<std::string>& agent_argv, const std::string& ssh_wrapper = "");

}  // namespace ds
