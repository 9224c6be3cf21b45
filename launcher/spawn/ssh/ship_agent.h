// --ship-agent: copies the launcher node's dsagent binary to a fresh per-job
// temporary directory on a node over SFTP, so the node needs nothing
// installed beyond the shared libraries, and removes it afterwards.
// Stateless functions over one SshSession (same threading rules as it).
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// Creates `${TMPDIR:-/tmp}/dslaunch-<job_id>.XXXXXX` on the node (mode 0700)
// and uploads `local_agent` into it as `dsagent` (mode 0755). Returns the
// remote path of the binary. On failure nothing is left behind.
Result<std::string> ShipAgent(SshSession& session, const std::string& local_agent, const std::string& job_id);

// Removes the directory ShipAgent created for `remote_agent` (the binary may
// still be running: Linux keeps it until it exits). Refuses any path that is
// not a ShipAgent directory.
Status RemoveShippedAgent(SshSession& session, const std::string& remote_agent);

}  // namespace ds
