// Diagnostics the NCCL way: DSLAUNCH_LOG=NONE|WARN|INFO|DEBUG selects the
// level, DSLAUNCH_LOG_SUBSYS=SSH,AGENT,... the subsystems. Each line goes to
// stderr prefixed "host:pid [rank] LEVEL SUBSYS". This is for diagnostics
// only; what a user must see (progress, summaries) is printed by the
// launcher's own output code. Thread-safe: each line is written atomically.
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>

namespace ds {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

enum class LogSubsys : uint32_t {
  kInit = 1 << 0, kSsh = 1 << 1, kAgent = 1 << 2, kCoord = 1 << 3, kHb = 1 << 4,
  kStore = 1 << 5, kProto = 1 << 6, kProc = 1 << 7, kTrain = 1 << 8,
  kComm = 1 << 9, kCkpt = 1 << 10,
};

// Sets the "host:pid [rank]" prefix of this process's log lines.
void LogSetIdentity(const std::string& host, int rank);
// Where whole lines (with their newline) go instead of one write() to stderr
// each; nullptr restores stderr. dslaunch hands them to its stderr writer
// thread, so that a stalled terminal never blocks its event loop.
void LogSetSink(std::function<void(std::string)> sink);
bool LogEnabled(LogLevel level, LogSubsys subsys);

class LogLine {
 public:
  LogLine(LogLevel level, LogSubsys subsys, const char* file, int line);
  ~LogLine();  // writes the line
  std::ostream& stream() { return os_; }

 private:
  LogLevel level_;
  LogSubsys subsys_;
  std::ostringstream os_;
};

}  // namespace ds

// DS_LOG(Warn, Ssh) << "host " << h << ": " << reason;   (levels Warn|Info|Debug)
#define DS_LOG(level, subsys)                                                \
  if (!::ds::LogEnabled(::ds::LogLevel::k##level, ::ds::LogSubsys::k##subsys))   \
    ;                                                                        \
  else                                                                       \
    ::ds::LogLine(::ds::LogLevel::k##level, ::ds::LogSubsys::k##subsys,       \
                  __FILE__, __LINE__).stream()
