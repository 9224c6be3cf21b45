#include "launcher/spawn/ssh/ssh_session.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>

#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include "common/clock.h"
#include "common/env_registry.h"
#include "common/log.h"
#include "common/netif.h"
#include "common/strings.h"

namespace ds {
namespace {

void EnsureLibsshInit() {
  static std::once_flag once;
  std::call_once(once, [] { ssh_init(); });
}

// ssh's reason with a lower-case first letter, to read well after "host: ".
std::string Reason(ssh_session s) {
  std::string r = ssh_get_error(s);
  if (!r.empty() && r[0] >= 'A' && r[0] <= 'Z' && !(r.size() > 1 && r[1] >= 'A' && r[1] <= 'Z'))
    r[0] = static_cast<char>(r[0] - 'A' + 'a');
  return r.empty() ? "unknown ssh error" : r;
}

std::string KnownHostsPath(ssh_session s) {
  char* path = nullptr;
  if (ssh_options_get(s, SSH_OPTIONS_KNOWNHOSTS, &path) == SSH_OK && path != nullptr) {
    std::string p = path;
    ssh_string_free_char(path);
    return p;
  }
  return "~/.ssh/known_hosts";
}

std::string PeerAddress(ssh_session s) {
  int fd = ssh_get_fd(s);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return AddressString(reinterpret_cast<const sockaddr*>(&ss));
}

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%gs", s);
  return buf;
}

}  // namespace

void SshSession::Free::operator()(ssh_session_struct* s) const {
  if (s == nullptr) return;
  if (ssh_is_connected(s)) ssh_disconnect(s);
  ssh_free(s);
}

Result<HostKeyPolicy> ParseHostKeyPolicy(std::string_view text) {
  if (text == "yes") return HostKeyPolicy::kYes;
  if (text == "accept-new") return HostKeyPolicy::kAcceptNew;
  if (text == "no") return HostKeyPolicy::kNo;
  std::string msg = "strict_host_key_checking: expected yes, accept-new or no, got '" + std::string(text) + "'";
  msg += DidYouMeanHint(text, {"yes", "accept-new", "no"});
  return Status::InvalidArgument(msg);
}

const char* HostKeyPolicyName(HostKeyPolicy p) {
  switch (p) {
    case HostKeyPolicy::kYes: return "yes";
    case HostKeyPolicy::kAcceptNew: return "accept-new";
    case HostKeyPolicy::kNo: return "no";
  }
  return "?";
}

std::vector<std::pair<std::string, std::string>> ForwardedEnv(const SshOptions& options) {
  std::vector<std::pair<std::string, std::string>> env;
  for (const auto& name : options.forward_env)
    if (auto v = GetAnyEnv(name)) env.emplace_back(name, *v);
  return env;
}

std::string SshHostName(const std::string& host, const SshOptions& options) {
  EnsureLibsshInit();
  std::unique_ptr<ssh_session_struct, SshSession::Free> s(ssh_new());
  if (!s) return host;
  ssh_options_set(s.get(), SSH_OPTIONS_HOST, host.c_str());
  if (ssh_options_parse_config(s.get(), options.config_file.empty() ? nullptr : options.config_file.c_str()) < 0)
    return host;
  char* name = nullptr;
  if (ssh_options_get(s.get(), SSH_OPTIONS_HOST, &name) != SSH_OK || name == nullptr) return host;
  std::string out = name;
  ssh_string_free_char(name);
  return out.empty() ? host : out;
}

Result<std::unique_ptr<SshSession>> SshSession::Connect(const SshTarget& target, const SshOptions& options) {
  EnsureLibsshInit();
  ssh_session raw = ssh_new();
  if (raw == nullptr) return Status::Internal(target.host + ": ssh_new failed");
  std::unique_ptr<SshSession> s(new SshSession(target.host, raw));

  ssh_options_set(raw, SSH_OPTIONS_HOST, target.host.c_str());
  long secs = std::max(1L, static_cast<long>(std::ceil(options.connect_timeout)));
  ssh_options_set(raw, SSH_OPTIONS_TIMEOUT, &secs);
  const char* config = options.config_file.empty() ? nullptr : options.config_file.c_str();
  if (ssh_options_parse_config(raw, config) < 0)
    return Status::InvalidArgument(target.host + ": cannot parse ssh config " +
                                   (config ? options.config_file : std::string("~/.ssh/config")) + ": " + Reason(raw));
  // The hostfile's user=/ssh_port= (and --ssh_port) win over the config.
  if (!target.user.empty()) ssh_options_set(raw, SSH_OPTIONS_USER, target.user.c_str());
  std::optional<int> port = target.port ? target.port : options.default_port;
  if (port) {
    unsigned int p = static_cast<unsigned int>(*port);
    ssh_options_set(raw, SSH_OPTIONS_PORT, &p);
  }

  if (ssh_connect(raw) != SSH_OK) {
    std::string reason = Reason(raw);
    std::string msg = target.host + ": " + reason;
    if (reason.find("imeout") != std::string::npos || reason.find("timed out") != std::string::npos)
      return Status::Timeout(msg + " (connect timeout " + FormatSeconds(options.connect_timeout) + ")");
    return Status::Unavailable(msg);
  }
  s->peer_address_ = PeerAddress(raw);
  DS_RETURN_IF_ERROR(s->VerifyHostKey(options.host_key_policy));
  DS_RETURN_IF_ERROR(s->Authenticate());
  // After connecting, blocking calls (exec, SFTP) get a generous timeout of
  // their own; the long-running agent channel is read without blocking.
  long op_secs = std::max(secs, 30L);
  ssh_options_set(raw, SSH_OPTIONS_TIMEOUT, &op_secs);
  return s;
}

Status SshSession::VerifyHostKey(HostKeyPolicy policy) {
  ssh_session s = session_.get();
  const std::string where = KnownHostsPath(s);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      return Status::OK();
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      if (policy == HostKeyPolicy::kNo) {
        DS_LOG(Warn, Ssh) << host_ << ": host key does NOT match " << where
                          << "; connecting anyway because strict_host_key_checking=no";
        return Status::OK();
      }
      return Status::PermissionDenied(
          host_ + ": host key verification failed: the key offered by " + host_ +
          (peer_address_.empty() ? "" : " (" + peer_address_ + ")") + " does not match the one in " + where +
          " (possible man-in-the-middle attack, or the host was reinstalled; remove the old entry with "
          "ssh-keygen -R " + host_ + " if the change is expected)");
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN:
      if (policy == HostKeyPolicy::kYes)
        return Status::PermissionDenied(host_ + ": host key verification failed: " + host_ + " is not in " + where +
                                        " and strict_host_key_checking=yes");
      if (policy == HostKeyPolicy::kNo) {
        DS_LOG(Warn, Ssh) << host_ << ": host key not verified (strict_host_key_checking=no)";
        return Status::OK();
      }
      if (ssh_session_update_known_hosts(s) != SSH_OK)
        return Status::IOError(host_ + ": cannot add the host key to " + where + ": " + Reason(s));
      DS_LOG(Info, Ssh) << host_ << ": new host key added to " << where << " (strict_host_key_checking=accept-new)";
      return Status::OK();
    case SSH_KNOWN_HOSTS_ERROR:
      break;
  }
  return Status::IOError(host_ + ": cannot check the host key against " + where + ": " + Reason(s));
}

Status SshSession::Authenticate() {
  ssh_session s = session_.get();
  int rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return Status::OK();
  char* user = nullptr;
  std::string who = "?";
  if (ssh_options_get(s, SSH_OPTIONS_USER, &user) == SSH_OK && user) {
    who = user;
    ssh_string_free_char(user);
  }
  if (rc == SSH_AUTH_ERROR) return Status::Unavailable(host_ + ": authentication error: " + Reason(s));
  return Status::PermissionDenied(host_ + ": permission denied (publickey) for user " + who +
                                  ": tried ssh-agent and the key files (IdentityFile, ~/.ssh/id_*)");
}

Result<ExecResult> SshSession::Run(const std::string& command, const std::string& stdin_data, double timeout) {
  ssh_session s = session_.get();
  ssh_channel ch = ssh_channel_new(s);
  if (ch == nullptr) return Status::IOError(host_ + ": cannot open a channel: " + Reason(s));
  struct Closer {
    ssh_channel c;
    ~Closer() { ssh_channel_close(c); ssh_channel_free(c); }
  } closer{ch};
  if (ssh_channel_open_session(ch) != SSH_OK || ssh_channel_request_exec(ch, command.c_str()) != SSH_OK)
    return Status::IOError(host_ + ": cannot run a command: " + Reason(s));
  if (!stdin_data.empty() &&
      ssh_channel_write(ch, stdin_data.data(), static_cast<uint32_t>(stdin_data.size())) < 0)
    return Status::IOError(host_ + ": cannot write to the command's stdin: " + Reason(s));
  ssh_channel_send_eof(ch);

  ExecResult r;
  auto deadline = std::chrono::steady_clock::now() + Seconds(timeout);
  char buf[8192];
  while (true) {
    int n = ssh_channel_read_timeout(ch, buf, sizeof(buf), 0, 100);
    if (n > 0) r.out.append(buf, n);
    int e;
    while ((e = ssh_channel_read_nonblocking(ch, buf, sizeof(buf), 1)) > 0) r.err.append(buf, e);
    if (n == SSH_ERROR || e == SSH_ERROR) return Status::IOError(host_ + ": " + Reason(s));
    if (ssh_channel_is_eof(ch) && n <= 0) break;
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Timeout(host_ + ": command did not finish within " + FormatSeconds(timeout));
  }
  r.exit_status = ssh_channel_get_exit_status(ch);
  return r;
}

Status SshSession::Upload(const std::string& local_path, const std::string& remote_path, int mode) {
  ssh_session s = session_.get();
  std::ifstream in(local_path, std::ios::binary);
  if (!in) return Status::NotFound(host_ + ": cannot read " + local_path + " to ship it");
  std::unique_ptr<sftp_session_struct, void (*)(sftp_session)> sftp(sftp_new(s), sftp_free);
  if (!sftp || sftp_init(sftp.get()) != SSH_OK)
    return Status::Unavailable(host_ + ": SFTP unavailable (is the sftp subsystem enabled in sshd?): " + Reason(s));
  sftp_file f = sftp_open(sftp.get(), remote_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode);
  if (f == nullptr) return Status::IOError(host_ + ": cannot create " + remote_path + ": " + Reason(s));
  std::vector<char> buf(32 * 1024);
  Status st;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    std::streamsize n = in.gcount();
    if (n > 0 && sftp_write(f, buf.data(), static_cast<size_t>(n)) != n) {
      st = Status::IOError(host_ + ": writing " + remote_path + " failed: " + Reason(s));
      break;
    }
  }
  if (sftp_close(f) != SSH_OK && st.ok()) st = Status::IOError(host_ + ": closing " + remote_path + " failed");
  return st;
}

}  // namespace ds
