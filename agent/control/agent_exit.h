// dsagent's process exit codes (documented for users in main.cc). Only
// main.cc and RunAgent turn them into the process's status; AgentControl
// keeps the one it leaves with. Constants only.
#pragma once

namespace ds {

enum class AgentExit : int {
  kShutdown = 0,          // the coordinator said Shutdown (with a job's status: that status)
  kUsage = 2,             // bad command line or no secret
  kConnectFailed = 3,     // could not connect or authenticate (or set up the event loop)
  kLostCoordinator = 4,   // connection closed or heartbeats stopped; workers were killed first
  kRefused = 5,           // the coordinator refused this agent's key (a wrong job secret)
  kParentGone = 6,        // --tree-parent: the parent's connection ended before we registered
  kInternalError = 7,     // a thread of the agent failed (named on stderr); workers were stopped first
  kSignalBase = 128,      // 128+S after termination signal S; workers were stopped first
};
constexpr int ExitCode(AgentExit e) { return static_cast<int>(e); }
constexpr int SignalExitCode(int sig) { return ExitCode(AgentExit::kSignalBase) + sig; }

}  // namespace ds
