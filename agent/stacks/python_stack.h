// Python frames for a CPython worker's hang stacks (docs/usage.md "Hangs"): after its
// native frames are taken, gdb attaches to the worker and calls CPython's
// own _Py_DumpTracebackThreads(fd, NULL, NULL) -- the async-signal-safe
// dumper faulthandler's signal handler calls: it takes no lock, allocates
// nothing and needs no GIL, so it works wherever the worker is stuck (in a
// C call, spinning in Python, holding the GIL) -- on a file the worker
// creates (O_EXCL|O_NOFOLLOW, 0600) in the agent's private directory
// (mkdtemp, 0700). The agent reads it back (O_NOFOLLOW, a regular file of
// its own, bounded) and removes it. gdb holds the worker's other threads
// during the call (scheduler-locking), drops a pending SIGSTOP (a stopped
// worker stays stopped after), restores the worker's errno, and unwinds
// the call if a signal interrupts it, so the worker goes on as it was. (A
// gdb killed in the middle of the call would leave the worker to crash:
// gdb is not started with less than a second to the deadline.)
// Found by its name in the dynamic symbol table (Debian's python3.11 has
// it) or in an unstripped interpreter; CPython 3.6 to 3.13 checked.
// The rank's text: kPythonFramesHeader, faulthandler's dump, then
// "Native frames (<tool>):" and the native dump; or one line saying why
// there are no Python frames, then the native section.
// The pure helpers are for the tests; PythonFrames runs gdb (thread-safe).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// "python3.11" when a mapping of `maps` (a /proc/PID/maps text) is CPython
// 3's executable (python3.X) or library (libpython3.X...so...), else "".
std::string CPythonInMaps(const std::string& maps);
// gdb's command line that makes `pid` write its Python threads' frames to
// `file` (which must not exist yet).
std::vector<std::string> PythonDumpCommand(const std::string& gdb, pid_t pid, const std::string& file);
// Why a gdb run that printed `gdb_output` left no frames: the dumper's own
// error, gdb's (no such symbol, ptrace refused, a signal during the call),
// the file not created, the deadline, else gdb's last line.
std::string WhyNoPythonFrames(const std::string& gdb_output);
// The last `max_bytes` of the dump file at `path` (older text marked cut),
// which is removed; "" with `why` set when it is not a regular file of this
// user's (a symbolic link is not followed, a FIFO not waited for), `why`
// left empty when there is none.
std::string ReadDumpFile(const std::string& path, size_t max_bytes, std::string* why);
// The rank's text: the Python section (`python`, faulthandler's dump) and
// the native one (`native`, by `tool`), within `max_bytes` split fairly
// (the smaller one whole, when it fits in half): the Python dump keeps its
// end (the main thread is listed last), the native one its start.
std::string JoinSections(const std::string& python, const std::string& native, const std::string& tool,
                         size_t max_bytes);
// The rank's text when it has no Python frames: one line with `why`, then the native section.
std::string WithoutPythonFrames(const std::string& why, const std::string& native, const std::string& tool);

class PythonFrames {
 public:
  // `gdb`: its path, "" when it is not installed; `max_bytes`: per rank.
  PythonFrames(std::string gdb, size_t max_bytes);
  ~PythonFrames();  // removes the private directory and what is in it
  PythonFrames(const PythonFrames&) = delete;
  PythonFrames& operator=(const PythonFrames&) = delete;

  // `native` (by `tool`) with the Python section of `pid` when it runs
  // CPython (frames, or why none); `native` unchanged otherwise. gdb is
  // killed at `deadline`. Blocking; any thread, one call per pid at a time.
  std::string Add(pid_t pid, const std::string& native, const std::string& tool,
                  std::chrono::steady_clock::time_point deadline);

 private:
  // faulthandler's text for `pid`, or nullopt with `why` set.
  std::optional<std::string> Dump(pid_t pid, std::chrono::steady_clock::time_point deadline, std::string* why);
  Result<std::string> Dir();  // the private directory, made on first use

  const std::string gdb_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::optional<Result<std::string>> dir_;  // guarded by mu_
};

}  // namespace ds
