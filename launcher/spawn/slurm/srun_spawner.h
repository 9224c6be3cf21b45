// SrunSpawner: `--launcher slurm`. Inside a Slurm allocation, starts the
// agents of every node as ONE job step: srun --nodes=N --ntasks-per-node=1
// --nodelist=... with one dsagent command line (launcher/spawn/step_command.h;
// each agent finds its node by SLURMD_NODENAME). The agent token reaches
// every task on stdin (--input=all), never in argv or the environment.
// A replacement agent (elastic.rejoin) is a new one-node step. The step
// shares the allocation's resources with any other step (--overlap) and,
// without --exact, gets every CPU of its nodes (Slurm 22.05's default for a
// step), which the workers need: they are the agents' children. GPUs come
// with the job's request (srun reads SLURM_GPUS_PER_NODE and the like).
// Failure: a job that cannot restart stops its step when one agent fails
// (--kill-on-bad-exit=1); an elastic one keeps the survivors when a node
// fails or an agent exits (--no-kill --kill-on-bad-exit=0), and the
// coordinator decides. srun's "srun: error: HOST: task N: ..." and
// "Node failure on HOST" lines, and with --verbose "srun: launch/slurm:
// _task_finish: HOST: task N: Completed", mark that host's agent ended (the rest of --verbose's output
// is logged at Debug). Stopping one
// host of a step alone is not possible here: it stops with its step (its
// agent ends by itself once it loses the coordinator).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/tool_group.h"

namespace ds {

struct SrunOptions {
  std::string srun_path = "srun";       // a name looked up on PATH, or a path
  bool elastic = false;                 // keep the other agents when one node fails
  double stop_grace = 5.0;              // SIGTERM to srun -> SIGKILL
  std::vector<std::string> extra_args;  // --launcher_args: after our options, before the agent
};

class SrunSpawner : public Spawner {
 public:
  explicit SrunSpawner(SrunOptions options) : options_(std::move(options)) {}
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;
  bool SharesPayload() const override { return true; }  // one run, one stdin for its agents

 private:
  Result<ToolGroupSpec> Prepare(const std::vector<AgentSpec>& specs) const;
  SrunOptions options_;
};

// srun's command line for `specs` with `agent_argv` (StepAgentArgv). Exposed for tests.
std::vector<std::string> SrunArgv(const SrunOptions& o, const std::vector<AgentSpec>& specs,
                                  const std::vector<std::string>& agent_argv);

// Parses one line of srun's stderr: true with the host and its agent's exit
// (0 for Completed, 128+S for a signal srun names, -1 for a node failure or
// a failed launch)
// when the line reports that host's task ended. Exposed for tests.
bool SrunHostEnded(bool is_err, const std::string& line, std::string* host, int* exit);

}  // namespace ds
