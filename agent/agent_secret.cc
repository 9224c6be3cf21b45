#include "agent/agent_secret.h"

#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "agent/pmi_token.h"
#include "common/env_registry.h"
#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace ds {

Result<std::string> ReadAgentSecret(const std::string& secret_file) {
  // mpirun leaves this file on its own node only, where --stdin all gives
  // the process a stdin that never ends: do not wait on it there.
  // The same path on another node may be another user's plant: refused, said once, and stdin used.
  if (!secret_file.empty()) {
    auto secret = ReadPrivateLine(secret_file, "--secret-file " + secret_file, SecretDir::kPrivate);
    if (secret.ok() && !secret->empty()) return *secret;
    if (secret.status().code() == Status::Code::kPermissionDenied)
      DS_LOG(Warn, Agent) << secret.status().message() << "; reading the token from stdin";
  }
  int fd = 0;
  if (auto raw = EnvRaw("DSLAUNCH_SECRET_FD"); raw && !raw->empty()) {
    auto n = ParseInt(*raw);
    if (!n || *n < 0) return Status::InvalidArgument(fmt::format("DSLAUNCH_SECRET_FD: expected an fd, got '{}'", *raw));
    fd = static_cast<int>(*n);
  }
  std::string line;
  char c;
  while (line.size() < 4096) {
    ssize_t r = ::read(fd, &c, 1);  // byte by byte: never read past the first line
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || c == '\n') break;
    line.push_back(c);
  }
  if (fd != 0) ::close(fd);
  std::string secret(Trim(line));
  if (secret.empty())
    return Status::InvalidArgument(fd == 0 ? "no job secret on stdin (expected one line)"
                                           : fmt::format("no job secret on fd {}", fd));
  return secret;
}

Result<std::string> ReadAgentKey(const AgentOptions& o) {
  if (!o.secret_via_pmi) return ReadAgentSecret(o.secret_file);
  auto rank = ParseInt(GetAnyEnv("PMI_RANK").value_or(""));
  auto fd = ParseInt(GetAnyEnv("PMI_FD").value_or(""));
  if (!rank || !fd || *rank < 0 || *fd < 0)
    return Status::InvalidArgument("--secret-via-pmi: PMI_RANK and PMI_FD are not set (not started by MPICH's mpiexec)");
  std::string mine;
  if (*rank == 0) {
    DS_ASSIGN_OR_RETURN(mine, ReadAgentSecret(o.secret_file));
  }
  return TokenThroughPmi(static_cast<int>(*fd), static_cast<int>(*rank), mine);
}

}  // namespace ds
