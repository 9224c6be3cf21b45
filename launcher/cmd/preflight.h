// `dslaunch check`: preflight of every host the same command line would run
// on (the hostfile, else this machine), printed as one table, checked the way
// the run would start its agents: over ssh in parallel (the fan-out) for
// --launcher ssh/pdsh/openmpi/mpich (and slurm, whose nodes it also reaches
// by ssh), here without ssh when the agents would run locally. Per host: ssh reachable (else ssh's own
// reason), dsagent present and its version, the working directory, slots vs
// GPUs (count and model from nvidia-smi when the node has it) or else CPUs,
// the interface and address that reach the master, the master port free (when
// --master_port is set), and clock skew. One row per host; one host's failure
// never hides another's.
// What is asked and how it is judged: preflight_checks.h.
#pragma once

#include <vector>

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/preflight_checks.h"

namespace ds {

// Connects to every host (fan-out) and evaluates it. Rows in hostfile order.
std::vector<PreflightRow> ProbeAllHosts(const Hostfile& hosts, const PreflightOptions& options);

// The `dslaunch check` subcommand: prints the table; returns 0 when every
// host is ready, 1 when one is not. InvalidArgument for a missing or bad
// hostfile, selection, job file, or a launcher the hosts cannot use
// (--launcher local with a remote host).
Result<int> RunPreflight(const CliOptions& cli);

}  // namespace ds
