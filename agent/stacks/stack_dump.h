// StackDumper: takes the stacks of the node's workers when the coordinator
// says the job is hung (wire DumpStacks), before anything is killed: native
// frames of every thread with elfutils' `eu-stack -p PID`, or `gdb -p PID
// -batch` when eu-stack is not installed, all workers at once, each bounded
// by the request's deadline and its output by msg::kMaxStackBytes; then,
// for a CPython worker, its Python frames (python_stack.h: gdb calls
// CPython's faulthandler dumper) within the same deadline and bound. The
// tools run on the dumper's own thread, so the agent's loop keeps beating
// meanwhile; the answer is announced on events_fd() (an eventfd) and picked
// up with Take(). Attaching needs ptrace rights over the workers (the
// agent's user, with kernel.yama.ptrace_scope 0, or 1 since each worker
// names the agent its tracer (worker_process.cc), or CAP_SYS_PTRACE); without
// them each rank's text is the tool's own refusal.
// The tools' children are reaped by whoever reaps the agent's children
// (AgentSession::Reap) or here, whichever comes first; neither needs the status.
// Start/Take/events_fd: the agent's thread; the dump runs on one worker thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "agent/control/seams.h"
#include "common/unique_fd.h"
#include "wire/protocol.h"

namespace ds {

// What to run for `pid`: eu-stack when `eu_stack` names it, else gdb; empty
// when neither was found (the search is FindTool's).
std::vector<std::string> StackCommand(const std::string& eu_stack, const std::string& gdb, pid_t pid);
// The path of `name` in the directories of `path` (as $PATH), "" when absent.
std::string FindTool(const std::string& name, const std::string& path);
// Runs `argv` with stdout and stderr to a pipe; at most `max_bytes` of the
// output (then "[cut]"), the rest drained; the process group killed at
// `deadline` ("[timed out]" appended). Blocking; any thread.
std::string RunBounded(const std::vector<std::string>& argv, size_t max_bytes,
                       std::chrono::steady_clock::time_point deadline);
// eu-stack's "TID 123:" headers as "TID 123 (name):", the name from
// `name_of(123)` (the agent: /proc/PID/task/123/comm; "" leaves the header
// as it is), so the hang report can find the training thread (gdb names
// threads itself).
std::string NameThreads(const std::string& eu_stack_text, const std::function<std::string(long tid)>& name_of);

class StackDumper : public StackDumps {
 public:
  // `path` is where the tools are looked for (Debian installs both in /usr/bin).
  explicit StackDumper(std::string path = "/usr/local/bin:/usr/bin:/bin");
  ~StackDumper() override;  // waits for a dump under way (bounded by its deadline)

  // StackDumps: begins dumping `targets`; the answer's generation is `generation`.
  // A request while one is under way is answered when that one is (its targets).
  void Start(uint32_t generation, std::vector<StackTarget> targets, std::chrono::milliseconds budget) override;
  int events_fd() const { return event_.get(); }
  // After events_fd() was readable: the finished answer (consumes the event).
  std::optional<msg::Stacks> Take();

 private:
  void Dump(uint32_t generation, std::vector<StackTarget> targets, std::chrono::steady_clock::time_point deadline);

  std::string path_;
  UniqueFd event_;
  std::thread worker_;
  std::mutex mu_;
  std::optional<msg::Stacks> done_;  // guarded by mu_
  bool busy_ = false;                // the agent's thread only
};

}  // namespace ds
