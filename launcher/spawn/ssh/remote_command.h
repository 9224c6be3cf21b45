// Remote command lines for the ssh and pdsh spawners: argv quoted for a
// POSIX shell, the small sh supervisor that feeds the agent its one-line
// secret and stops it when the connection goes away, and the OpenSSH client
// command lines of pdsh and the launch tree. Pure string builders,
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

// "exec 'a' 'b c'": argv as one shell command line, each word quoted; with
// `env`, "exec env K=V ... argv" (no `export`, so csh/fish logins work too).
std::string RemoteCommand(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env);

// RemoteCommand for a supervised agent: a small POSIX sh wrapper reads one
// line (the secret) from the channel's stdin and pipes it to `argv`, then
// keeps watching stdin: EOF (sent by Terminate(), or the channel/connection
// going away, e.g. dslaunch killed) sends TERM to the agent, and KILL to the
// wrapper's process group if the agent is still there 5 s later. This works where
// sshd refuses "signal" requests (root logins, which skip privilege
// separation). The wrapper exits with the agent's status (128+signal when
// killed). With `has_payload` false the agent's stdin is /dev/null. With
// `outlive_session` (coordinator failover: the agent keeps its workers for
// coordinator.grace when the launcher is gone, and ends them and itself
// when no new leader comes) the end of the channel ends nothing.
std::string SupervisedCommand(const std::vector<std::string>& argv,
                              const std::vector<std::pair<std::string, std::string>>& env, bool has_payload,
                              bool outlive_session = false);

// Where the supervisor script finds the agent's one-line stdin payload.
enum class PayloadFrom {
  kNone,        // agent stdin is /dev/null
  kStdinLine,   // the first line of the channel's stdin (libssh spawner)
  kEnvBase64,   // $LC_DSLAUNCH_PAYLOAD, base64 (pdsh cannot forward stdin;
                // sshd must accept LC_*, Debian's default); unset before the agent runs
};
// The POSIX sh supervisor (see SupervisedCommand) running "$@" as the agent.
std::string SupervisorScript(PayloadFrom from, bool outlive_session = false);

// The OpenSSH client's options for an agent's session, as SshSession
// would open it: no agent or X11 forwarding, BatchMode (never a prompt),
// `options`' connect timeout (whole seconds, rounded up), host key policy
// and config file (-F, when DSLAUNCH_SSH_CONFIG named one), and `port`.
std::vector<std::string> OpenSshOptions(const SshOptions& options, std::optional<int> port);

// The OpenSSH command line that runs `remote` (a RemoteCommand) on
// `target`: what a --fanout-tree parent runs to start a child's agent, on
// its own node with its own ssh (DSLAUNCH_SSH_CONFIG, when set, must name a
// file that exists there too).
std::vector<std::string> OpenSshArgv(const SshTarget& target, const SshOptions& options, const std::string& remote);

}  // namespace ds
