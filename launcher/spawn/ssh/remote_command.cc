#include "launcher/spawn/ssh/remote_command.h"

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

std::string SupervisorScript(PayloadFrom from) {
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
                              const std::vector<std::pair<std::string, std::string>>& env, bool has_payload) {
  std::vector<std::string> words = {"sh", "-c", SupervisorScript(has_payload ? PayloadFrom::kStdinLine : PayloadFrom::kNone),
                                    "dslaunch-agent"};
  words.insert(words.end(), argv.begin(), argv.end());
  return RemoteCommand(words, env);
}

}  // namespace ds
