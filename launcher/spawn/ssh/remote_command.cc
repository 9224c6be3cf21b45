#include "launcher/spawn/ssh/remote_command.h"

#include <cmath>

#include "common/strings.h"

namespace ds {

std::string RemoteCommand(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  // `exec [env K=V ...] argv`: valid in sh, bash, zsh, csh and fish alike,
  // whatever the remote user's login shell is.
  std::string cmd = env.empty() ? "exec" : "exec env";
  for (const auto& [k, v] : env) cmd += " " + ShellQuote(k + "=" + v);
  for (const auto& a : argv) cmd += " " + ShellQuote(a);
  return cmd;
}

std::string SupervisorScript(PayloadFrom from, bool outlive_session) {
  // fd 3 keeps the channel's stdin; the agent gets neither fd 3 nor the
  // secret on its command line (printf is a shell builtin).
  std::string start;
  switch (from) {
    case PayloadFrom::kNone:
      start = "\"$@\" 3<&- </dev/null & ";
      break;
    case PayloadFrom::kStdinLine:
      start = "IFS= read -r s <&3; printf '%s\\n' \"$s\" | \"$@\" 3<&- & ";
      break;
    case PayloadFrom::kEnvBase64:
      start =
          "s=${LC_DSLAUNCH_PAYLOAD:-}; unset LC_DSLAUNCH_PAYLOAD; "
          "if [ -z \"$s\" ]; then echo 'dslaunch: the job secret did not arrive: the node'\\''s sshd must accept "
          "LC_* variables (AcceptEnv LC_*, the Debian default)' >&2; exit 2; fi; "
          "printf '%s\\n' \"$s\" | base64 -d | \"$@\" 3<&- & ";
      break;
  }
  if (outlive_session) return "exec 3<&0; " + start + "a=$!; exec 3<&-; wait $a";
  return "exec 3<&0; " + start +
         "a=$!; "
         // EOF: TERM the agent; if it is still there after 5 s, KILL the
         // process group the wrapper leads (under sshd it is the session leader;
         // elsewhere no such group exists and nothing happens).
         "(while IFS= read -r _ <&3; do :; done; kill -TERM $a 2>/dev/null; i=0; "
         "while kill -0 $a 2>/dev/null; do i=$((i+1)); [ $i -gt 50 ] && kill -s KILL -- -$$; sleep 0.1; done) & "
         "w=$!; exec 3<&-; "
         "wait $a; rc=$?; kill $w 2>/dev/null; exit $rc";
}

std::string SupervisedCommand(const std::vector<std::string>& argv,
                              const std::vector<std::pair<std::string, std::string>>& env, bool has_payload,
                              bool outlive_session) {
  std::vector<std::string> words = {
      "sh", "-c", SupervisorScript(has_payload ? PayloadFrom::kStdinLine : PayloadFrom::kNone, outlive_session),
      "dslaunch-agent"};
  words.insert(words.end(), argv.begin(), argv.end());
  return RemoteCommand(words, env);
}

std::vector<std::string> OpenSshOptions(const SshOptions& options, std::optional<int> port) {
  std::vector<std::string> a = {"-a", "-x", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(std::max(1L, std::lround(std::ceil(options.connect_timeout)))),
                                "-o", std::string("StrictHostKeyChecking=") + HostKeyPolicyName(options.host_key_policy)};
  if (!options.config_file.empty()) a.insert(a.end(), {"-F", options.config_file});
  if (port) a.insert(a.end(), {"-p", std::to_string(*port)});
  return a;
}

std::vector<std::string> OpenSshArgv(const SshTarget& target, const SshOptions& options, const std::string& remote) {
  std::vector<std::string> argv = {"ssh", "-T"};
  for (std::string& o : OpenSshOptions(options, target.port ? target.port : options.default_port))
    argv.push_back(std::move(o));
  if (!target.user.empty()) argv.insert(argv.end(), {"-l", target.user});
  argv.insert(argv.end(), {"--", target.host, remote});
  return argv;
}

}  // namespace ds
