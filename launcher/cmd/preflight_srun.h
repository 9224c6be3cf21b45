// `dslaunch check` where a run would start its agents with srun (--launcher
// slurm, or auto inside sbatch/salloc without a hostfile): the probe runs
// where the agents would, as one srun step over the allocation's nodes, no
// ssh. srun labels each task's lines ("T: ..."); each task first names its
// node (SLURMD_NODENAME), so rows never depend on srun's task order. Node 0
// of the allocation also checks the master port, as the first host does over
// ssh. The clock is not compared (Slurm nodes share their controller's).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/cmd/preflight_checks.h"
#include "launcher/cmd/plan_from_cli.h"

namespace ds {

// The step's command line: one task per node of `hosts`, in the allocation
// beside any other step (--overlap), labelled, running `script` with sh.
std::vector<std::string> SrunProbeArgv(const std::string& srun, const Hostfile& hosts, const std::string& script);

// One script for every node: the first host's probe on SLURM_NODEID 0, the
// others' elsewhere, after a "node=<SLURMD_NODENAME>" line.
std::string SrunProbeScript(const PreflightOptions& o, const std::string& master_addr);

// srun --label's output split by the node each task named: node -> its
// probe output (without the label and the node= line). Lines of a task
// that named no node are dropped.
std::map<std::string, std::string> ProbeOutputsByNode(const std::string& labelled);

// Runs the step (through `run`, argv -> stdout) and judges each host; a host
// that did not answer gets srun's error, or "no answer from srun's task".
std::vector<PreflightRow> ProbeWithSrun(const Hostfile& hosts, const PreflightOptions& o,
                                        const CommandOutput& run);

}  // namespace ds
