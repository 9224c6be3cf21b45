#include "launcher/spawn/ssh/pdsh_spawner.h"

#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/log.h"
#include "common/strings.h"
#include "launcher/spawn/ssh/remote_command.h"
#include "launcher/spawn/tool_group.h"

namespace ds {
namespace {

std::string Base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

// "pdsh@node: host: ssh exited with exit code N": that host's end.
bool PdshHostEnded(bool is_err, const std::string& line, std::string* host, int* exit) {
  if (!is_err || !StartsWith(line, "pdsh@")) return false;
  const size_t a = line.find(": ");
  const size_t b = a == std::string::npos ? a : line.find(": ", a + 2);
  if (b == std::string::npos) return false;
  const std::string rest = line.substr(b + 2), tag = "ssh exited with exit code ";
  if (!StartsWith(rest, tag)) return false;
  *host = line.substr(a + 2, b - a - 2);
  *exit = static_cast<int>(ParseInt(rest.substr(tag.size())).value_or(-1));
  return true;
}

// pdsh's ssh client for host `h` (a child of pdsh whose argv holds `h` as a
// word), or -1.
pid_t SshChildFor(pid_t pdsh, const std::string& h) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pdsh) + "/task", ec)) {
    std::ifstream children(task.path() / "children");
    long child;
    while (children >> child) {
      std::ifstream cmdline("/proc/" + std::to_string(child) + "/cmdline");
      std::string arg;
      while (std::getline(cmdline, arg, '\0'))
        if (arg == h) return static_cast<pid_t>(child);
    }
  }
  return -1;
}

// Ends one host's ssh client; its remote supervisor sees EOF and stops the
// agent, and pdsh reports the exit.
bool StopPdshHost(pid_t pdsh, const std::string& h) {
  const pid_t ssh = SshChildFor(pdsh, h);
  if (ssh <= 0) return false;
  ::kill(ssh, SIGTERM);
  return true;
}

}  // namespace

Result<std::string> FindPdsh(const std::string& name) {
  auto found = FindExecutable(name);
  if (found.ok()) return found;
  return Status::NotFound("--launcher pdsh: pdsh is not installed (no '" + name +
                          "' on PATH; apt-get install pdsh), or use --launcher ssh, which needs no pdsh");
}

std::string PdshRemoteCommand(const std::vector<AgentSpec>& specs,
                              const std::vector<std::pair<std::string, std::string>>& env) {
  std::string script = "case %h in ";
  for (const auto& s : specs) {
    script += ShellQuote(s.host) + ") set --";
    for (const auto& a : s.argv) script += " " + ShellQuote(a);
    script += ";; ";
  }
  script += "*) echo \"dslaunch: no agent command for host %h\" >&2; exit 2;; esac; ";
  bool payload = !specs.empty() && !specs[0].stdin_payload.empty();
  script += SupervisorScript(payload ? PayloadFrom::kEnvBase64 : PayloadFrom::kNone);
  return RemoteCommand({"sh", "-c", script}, env);
}

std::string PdshSshArgs(const SshOptions& ssh, std::optional<int> port) {
  std::string a = "-o SendEnv=LC_DSLAUNCH_PAYLOAD";
  for (const std::string& o : OpenSshOptions(ssh, port)) a += " " + ShellQuote(o);
  return a + " -l%u %h";
}

std::vector<Result<std::unique_ptr<AgentHandle>>> PdshSpawner::Start(const std::vector<AgentSpec>& specs) {
  StartSlots slots(specs.size());
  auto pdsh = FindPdsh(options_.pdsh_path);
  // Hosts sharing a port and a payload go in one pdsh run.
  std::map<std::pair<int, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < specs.size(); ++i) {
    const AgentSpec& s = specs[i];
    std::string payload = s.stdin_payload;
    if (!payload.empty() && payload.back() == '\n') payload.pop_back();
    if (!pdsh.ok()) slots[i].emplace(pdsh.status().Prefixed(s.host));
    else if (s.argv.empty()) slots[i].emplace(Status::InvalidArgument(s.host + ": empty agent command"));
    else if (payload.find('\n') != std::string::npos)
      slots[i].emplace(Status::InvalidArgument(s.host + ": the agent's stdin payload must be one line"));
    else groups[{s.ssh_port.value_or(options_.ssh.default_port.value_or(0)), payload}].push_back(i);
  }
  const std::vector<std::pair<std::string, std::string>> fwd = ForwardedEnv(options_.ssh);
  for (auto& [key, idx] : groups) {
    std::vector<AgentSpec> g;
    std::string wlist;
    std::vector<std::string> hosts;
    for (size_t i : idx) {
      g.push_back(specs[i]);
      wlist += (wlist.empty() ? "" : ",") + (specs[i].user.empty() ? "" : specs[i].user + "@") + specs[i].host;
      hosts.push_back(specs[i].host);
    }
    std::optional<int> port = key.first ? std::optional<int>(key.first) : std::nullopt;
    std::vector<std::string> argv = {*pdsh, "-S", "-f", std::to_string(std::max(1, options_.ssh.fanout)),
                                     "-t", std::to_string(std::max(1L, std::lround(std::ceil(options_.ssh.connect_timeout)))),
                                     "-w", wlist};
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    argv.push_back(PdshRemoteCommand(g, fwd));
    std::vector<std::pair<std::string, std::string>> env = {
        {"PDSH_RCMD_TYPE", "ssh"}, {"PDSH_SSH_ARGS", PdshSshArgs(options_.ssh, port)}};
    if (!key.second.empty()) env.emplace_back("LC_DSLAUNCH_PAYLOAD", Base64(key.second + "\n"));
    DS_LOG(Info, Ssh) << "pdsh -w " << wlist << " (PDSH_SSH_ARGS=" << env[1].second << ")";
    ToolGroupSpec tool{.tool = "pdsh", .path = *pdsh, .argv = std::move(argv), .env = std::move(env),
                       .stdin_data = std::nullopt, .hosts = hosts, .grace = options_.ssh.stop_grace,
                       .host_ended = PdshHostEnded, .benign = nullptr, .stop_host = StopPdshHost};
    auto handles = StartToolGroup(std::move(tool));
    for (size_t k = 0; k < idx.size(); ++k) {
      if (!handles.ok()) slots[idx[k]].emplace(handles.status().Prefixed(specs[idx[k]].host));
      else slots[idx[k]].emplace(std::move((*handles)[k]));
    }
  }
  return TakeStartResults(slots);
}

std::unique_ptr<Spawner> MakePdshSpawner(const PdshOptions& options) {
  return std::make_unique<PdshSpawner>(options);
}

}  // namespace ds
