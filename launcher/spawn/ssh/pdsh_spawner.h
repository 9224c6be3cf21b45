// PdshSpawner: `--launcher pdsh`, DeepSpeed compatibility. Starts every agent
// with ONE run of the real pdsh binary (PDSH_RCMD_TYPE=ssh, -f fanout),
// which picks each host's agent command by its name (%h). pdsh cannot
// forward stdin, so the one-line stdin payload (the job secret) travels in
// the ssh session's environment as LC_DSLAUNCH_PAYLOAD (SendEnv; sshd must
// accept LC_*, Debian's default), never on a command line; the remote
// supervisor (SupervisorScript) unsets it and pipes it to the agent.
// Limits, documented: pdsh reports a host's failure only when its ssh
// exits, so Start() succeeds per host and a failure shows as Running()
// false + ExitStatus 255 with pdsh's reason in the diagnostics; and a
// host's exit 0 shows only when its pdsh run ends. Terminate() on one host
// ends that host's ssh client (found among pdsh's children); on the last
// host it ends pdsh. Each handle's exit_fd() is an eventfd the reader thread
// raises when pdsh reports that host's end (or pdsh itself ends).
// Thread-safety as in spawner.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/spawn/spawner.h"
#include "launcher/spawn/ssh/ssh_session.h"

namespace ds {

struct PdshOptions {
  std::string pdsh_path = "pdsh";    // a name looked up on PATH, or a path
  SshOptions ssh;                    // fanout, connect_timeout, default_port, config_file, host key policy
  std::vector<std::string> extra_args;  // --launcher_args: after pdsh's own options, before the command
};

class PdshSpawner : public Spawner {
 public:
  explicit PdshSpawner(PdshOptions options) : options_(std::move(options)) {}
  // One result per spec; every spec fails with the same clear message when
  // pdsh is not installed.
  std::vector<Result<std::unique_ptr<AgentHandle>>> Start(const std::vector<AgentSpec>& specs) override;
  bool SharesPayload() const override { return true; }  // one run, one stdin for its agents

 private:
  PdshOptions options_;
};

std::unique_ptr<Spawner> MakePdshSpawner(const PdshOptions& options);

// The pdsh executable: `name` if it contains a '/', else the first match on
// PATH. NotFound: "--launcher pdsh: pdsh is not installed (...)".
Result<std::string> FindPdsh(const std::string& name);

// The remote command pdsh runs on every host: a `case %h in` that sets the
// host's own argv, then the supervisor. Exposed for tests.
std::string PdshRemoteCommand(const std::vector<AgentSpec>& specs,
                              const std::vector<std::pair<std::string, std::string>>& env);

// PDSH_SSH_ARGS for these options (pdsh expands %u and %h).
std::string PdshSshArgs(const SshOptions& ssh, std::optional<int> port);

}  // namespace ds
