#include "launcher/spawn/ssh/ship_agent.h"

#include <unistd.h>

#include <cctype>

#include "common/log.h"
#include "common/strings.h"

namespace ds {
namespace {

std::string SafeJobId(const std::string& job_id) {
  std::string out;
  for (char c : job_id)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') out += c;
  return out.empty() ? "job" : out.substr(0, 32);
}

// The directory of a shipped agent, or "" when `remote_agent` was not made
// by ShipAgent (so that we never remove anything else).
std::string ShippedDir(const std::string& remote_agent) {
  const std::string suffix = "/dsagent";
  if (remote_agent.size() <= suffix.size() ||
      remote_agent.compare(remote_agent.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  std::string dir = remote_agent.substr(0, remote_agent.size() - suffix.size());
  auto slash = dir.rfind('/');
  if (slash == std::string::npos || !StartsWith(std::string_view(dir).substr(slash + 1), "dslaunch-")) return "";
  if (dir.find("..") != std::string::npos) return "";
  return dir;
}

}  // namespace

Result<std::string> ShipAgent(SshSession& session, const std::string& local_agent, const std::string& job_id) {
  if (local_agent.empty() || local_agent[0] != '/' || access(local_agent.c_str(), R_OK) != 0)
    return Status::NotFound(session.host() + ": --ship-agent: cannot read the local agent binary '" + local_agent +
                            "' (expected an absolute path to dsagent)");
  std::string tmpl = "\"${TMPDIR:-/tmp}\"/dslaunch-" + SafeJobId(job_id) + ".XXXXXX";
  DS_ASSIGN_OR_RETURN(ExecResult mk, session.Run("mktemp -d " + tmpl, "", 30));
  std::string dir(Trim(mk.out));
  if (mk.exit_status != 0 || dir.empty() || dir[0] != '/')
    return Status::IOError(session.host() + ": --ship-agent: mktemp failed: " + std::string(Trim(mk.err)));
  std::string remote = dir + "/dsagent";
  Status st = session.Upload(local_agent, remote, 0755);
  if (!st.ok()) {
    (void)session.Run("rm -rf -- " + ShellQuote(dir), "", 30);
    return st.Prefixed("--ship-agent");
  }
  DS_LOG(Info, Ssh) << session.host() << ": shipped " << local_agent << " to " << remote;
  return remote;
}

Status RemoveShippedAgent(SshSession& session, const std::string& remote_agent) {
  std::string dir = ShippedDir(remote_agent);
  if (dir.empty()) return Status::InvalidArgument(session.host() + ": not a shipped agent path: " + remote_agent);
  DS_ASSIGN_OR_RETURN(ExecResult r, session.Run("rm -rf -- " + ShellQuote(dir), "", 30));
  if (r.exit_status != 0)
    return Status::IOError(session.host() + ": cannot remove " + dir + ": " + std::string(Trim(r.err)));
  return Status::OK();
}

}  // namespace ds
