// The SSH settings of one launch, merged from every place they can be set.
// Highest first:
//   1. the command line: --connect-timeout, --ssh_port, --fanout, --ship-agent;
//   2. the job file's ssh: section (strict_host_key_checking, connect_timeout, port);
//   3. the DSLAUNCH_SSH_CONFIG / DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING /
//      DSLAUNCH_CONNECT_TIMEOUT settings, then the built-in defaults.
// A hostfile line's ssh_port= beats all of them for its host (AgentSpec).
// Pure apart from reading the env registry. MakeSpawner is in run_job.h.
#pragma once

#include "launcher/cmd/cli.h"
#include "launcher/config/job_spec.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// Error: an invalid DSLAUNCH_SSH_STRICT_HOST_KEY_CHECKING (named) or job
// file policy (the parser already rejects those, so only hand-built specs).
Result<SshOptions> SshOptionsForJob(const JobSpec& job, const CliOptions& cli);

}  // namespace ds
