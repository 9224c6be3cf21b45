// SshSession: one authenticated libssh session to one host, shared by the ssh
// spawner, --ship-agent and `dslaunch check`. Connect() applies, in order:
// the host name, the ssh config file (~/.ssh/config or DSLAUNCH_SSH_CONFIG:
// Host, HostName, User, Port, IdentityFile, UserKnownHostsFile), then the
// hostfile's user=/ssh_port= (or --ssh_port), which win. Host keys are
// checked against known_hosts with the HostKeyPolicy; authentication tries
// ssh-agent, then the key files. Every error starts with the host name and
// keeps ssh's own reason ("w3: connection refused").
// A session is used by one thread at a time; different sessions may be used
// from different threads concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/defaults.h"
#include "common/status.h"

struct ssh_session_struct;

namespace ds {

// ssh.strict_host_key_checking: never silently off.
enum class HostKeyPolicy {
  kYes,        // unknown or changed key: refuse
  kAcceptNew,  // unknown key: add to known_hosts; changed key: refuse
  kNo,         // no verification; a warning is logged on every connection
};
Result<HostKeyPolicy> ParseHostKeyPolicy(std::string_view text);
const char* HostKeyPolicyName(HostKeyPolicy p);

struct SshOptions {
  int fanout = 32;                      // sessions opened in parallel at most
  double connect_timeout = kDefaultConnectTimeout;  // seconds, per host (TCP connect + handshake)
  std::optional<int> default_port;      // --ssh_port: hosts without ssh_port=
  std::string config_file;              // "" = ~/.ssh/config (DSLAUNCH_SSH_CONFIG)
  HostKeyPolicy host_key_policy = HostKeyPolicy::kAcceptNew;
  bool ship_agent = false;              // --ship-agent: SFTP the local dsagent to a temp dir first
  bool outlive_session = false;         // coordinator failover: an agent outlives its session (SupervisedCommand)
  double stop_grace = kDefaultStopGrace + 1.0;  // Terminate: seconds between TERM and closing the channel
                                                // (the agent's own grace, plus a second to report)
  // Non-secret variables passed to the remote agent (on its command line,
  // as `export K=V`), when set here.
  std::vector<std::string> forward_env = {"DSLAUNCH_LOG", "DSLAUNCH_LOG_SUBSYS", "DSLAUNCH_COLOR",
                                          "DSLAUNCH_STOP_GRACE"};
};

// The forward_env variables that are set in this process, with their values,
// in forward_env's order (for the remote agent's command line).
std::vector<std::pair<std::string, std::string>> ForwardedEnv(const SshOptions& options);

struct SshTarget {
  std::string host;              // as written in the hostfile (may be an ssh config alias)
  std::string user;              // "" = ssh config, else the local user
  std::optional<int> port;       // hostfile ssh_port=
};

// What a command run to completion produced.
struct ExecResult {
  int exit_status = -1;          // -1 if the remote side sent none (killed by a signal)
  std::string out;
  std::string err;
};

class SshSession {
 public:
  struct Free { void operator()(ssh_session_struct* s) const; };  // disconnects and frees a libssh session
  ~SshSession() = default;  // disconnects
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  // Connects, verifies the host key and authenticates. Errors: Unavailable
  // (DNS, refused, unreachable), Timeout, PermissionDenied (auth, host key).
  static Result<std::unique_ptr<SshSession>> Connect(const SshTarget& target, const SshOptions& options);

  // Runs `command` through the remote user's shell, writes `stdin_data` then
  // EOF, and collects output until the command ends or `timeout` seconds pass
  // (Timeout error; the channel is closed).
  Result<ExecResult> Run(const std::string& command, const std::string& stdin_data, double timeout);

  // Copies the local file `local_path` to `remote_path` over SFTP with `mode`.
  Status Upload(const std::string& local_path, const std::string& remote_path, int mode);

  const std::string& host() const { return host_; }
  // The address the TCP connection went to ("10.77.0.12"), "" if unknown.
  const std::string& peer_address() const { return peer_address_; }
  // The underlying libssh session (ssh_session), for channels.
  ssh_session_struct* raw() { return session_.get(); }

 private:
  SshSession(std::string host, ssh_session_struct* s) : host_(std::move(host)), session_(s) {}
  Status VerifyHostKey(HostKeyPolicy policy);
  Status Authenticate();

  std::string host_;
  std::string peer_address_;
  std::unique_ptr<ssh_session_struct, Free> session_;
};

// The address `host` stands for after the ssh config (HostName), for
// routing decisions before any connection; `host` itself when the config
// says nothing. Never fails and does no network I/O.
std::string SshHostName(const std::string& host, const SshOptions& options);

}  // namespace ds
