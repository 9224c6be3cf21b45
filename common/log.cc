#include "common/log.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>

#include "common/env_registry.h"
#include "common/strings.h"

namespace ds {
namespace {

struct SubsysName { const char* name; LogSubsys bit; };
constexpr SubsysName kSubsys[] = {
    {"INIT", LogSubsys::kInit}, {"SSH", LogSubsys::kSsh}, {"AGENT", LogSubsys::kAgent},
    {"COORD", LogSubsys::kCoord}, {"HB", LogSubsys::kHb}, {"STORE", LogSubsys::kStore},
    {"PROTO", LogSubsys::kProto}, {"PROC", LogSubsys::kProc}, {"TRAIN", LogSubsys::kTrain},
    {"COMM", LogSubsys::kComm}, {"CKPT", LogSubsys::kCkpt},
};

struct State {
  std::mutex mu;
  bool initialized = false;
  LogLevel level = LogLevel::kWarn;
  uint32_t mask = ~0u;
  std::string prefix;
  std::function<void(std::string)> sink;  // empty: write(2) to stderr
};

State& GetState() {
  static State s;
  return s;
}

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
    default: return "";
  }
}

const char* SubsysNameOf(LogSubsys s) {
  for (const auto& n : kSubsys)
    if (n.bit == s) return n.name;
  return "?";
}

void InitLocked(State& s) {
  std::string level = EnvString("DSLAUNCH_LOG");
  std::transform(level.begin(), level.end(), level.begin(), ::toupper);
  if (level == "NONE") s.level = LogLevel::kNone;
  else if (level == "INFO") s.level = LogLevel::kInfo;
  else if (level == "DEBUG" || level == "TRACE") s.level = LogLevel::kDebug;
  else s.level = LogLevel::kWarn;

  std::string subsys = EnvString("DSLAUNCH_LOG_SUBSYS");
  bool exclude = !subsys.empty() && subsys[0] == '^';
  if (exclude) subsys = subsys.substr(1);
  uint32_t mask = 0;
  for (auto& tok : Split(subsys, ',')) {
    std::string t(Trim(tok));
    std::transform(t.begin(), t.end(), t.begin(), ::toupper);
    if (t == "ALL") mask = ~0u;
    for (const auto& n : kSubsys)
      if (t == n.name) mask |= static_cast<uint32_t>(n.bit);
  }
  s.mask = exclude ? ~mask : mask;
  if (s.prefix.empty()) {
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    s.prefix = std::string(host) + ":" + std::to_string(getpid());
  }
  s.initialized = true;
}

}  // namespace

void LogSetIdentity(const std::string& host, int rank) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) InitLocked(s);
  s.prefix = host + ":" + std::to_string(getpid());
  if (rank >= 0) s.prefix += " [" + std::to_string(rank) + "]";
}

void LogSetSink(std::function<void(std::string)> sink) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sink = std::move(sink);
}

bool LogEnabled(LogLevel level, LogSubsys subsys) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) InitLocked(s);
  return level != LogLevel::kNone && level <= s.level &&
         (s.mask & static_cast<uint32_t>(subsys)) != 0;
}

LogLine::LogLine(LogLevel level, LogSubsys subsys, const char* file, int line)
    : level_(level), subsys_(subsys) {
  (void)file;
  (void)line;
}

LogLine::~LogLine() {
  State& s = GetState();
  std::string prefix;
  std::function<void(std::string)> sink;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    prefix = s.prefix;
    sink = s.sink;
  }
  std::string text = prefix + " " + LevelName(level_) + " " + SubsysNameOf(subsys_) + " " +
                     os_.str() + "\n";
  if (sink) {
    sink(std::move(text));
    return;
  }
  // One write() per line so concurrent lines never interleave.
  ssize_t unused = ::write(STDERR_FILENO, text.data(), text.size());
  (void)unused;
}

}  // namespace ds
