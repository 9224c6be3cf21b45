// The hang report (hang_report.h): parse, normalise, group, print.
#include "launcher/coordinator/hang_report.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/strings.h"
#include "common/training_thread.h"
#include "wire/protocol.h"

namespace ds {
namespace {

// Waits and syscall wrappers: where every blocked thread is, so not the
// frame that tells ranks apart.
const std::set<std::string> kWaits = {
    "poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait", "read", "write", "recv", "recvfrom",
    "recvmsg", "send", "sendto", "sendmsg", "nanosleep", "clock_nanosleep", "sleep", "usleep", "pause",
    "syscall", "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_join",
    "sem_wait", "sem_timedwait", "wait4", "waitpid", "sigsuspend", "sigtimedwait", "accept", "accept4",
    "connect", "futex_wait", "raise", "kill"};

bool IsWait(const std::string& f) { return f.empty() || f == "??" || f.rfind("__", 0) == 0 || kWaits.count(f) > 0; }

// "#3  0x00007f... in gloo::Foo::bar (this=0x1, n=2) at f.cc:10" (gdb) or
// "#3  0x00007f... gloo::Foo::bar(int) - /usr/lib/libgloo.so" (eu-stack)
// -> "gloo::Foo::bar"; "" when the line is not a frame.
std::string FrameName(const std::string& line) {
  size_t p = line.find_first_not_of(" \t");
  if (p == std::string::npos || line[p] != '#') return "";
  p = line.find_first_of(" \t", p);
  auto skip = [&] { p = p == std::string::npos ? p : line.find_first_not_of(" \t", p); };
  skip();
  if (p != std::string::npos && line.compare(p, 2, "0x") == 0) {
    p = line.find_first_of(" \t", p);
    skip();
  }
  if (p != std::string::npos && line.compare(p, 3, "in ") == 0) p += 3;
  if (p == std::string::npos) return "";
  std::string name = line.substr(p);
  for (size_t a; (a = name.find("(anonymous namespace)")) != std::string::npos;)
    name.replace(a, 21, "{anon}");  // not an argument list: keep what follows
  for (const char* end : {" (", "(", " - ", " at ", " from ", "@@", "@", "+0x", " "})
    if (size_t e = name.find(end); e != std::string::npos && e > 0) name.resize(e);
  return name;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

bool IsThreadHeader(const std::string& line) { return line.rfind("TID ", 0) == 0 || line.rfind("Thread ", 0) == 0; }

// A CPython rank's text (agent/stacks/python_stack.h): its Python section (after
// the kPythonFramesHeader line) and its native one (after the "Native frames
// (<tool>):" line). Any other text is all native.
struct Sections {
  std::string python;
  std::string native;
};
Sections SplitSections(const std::string& text) {
  if (!StartsWith(text, "Python frames")) return {"", text};
  const std::string native_header = std::string("\n") + msg::kNativeFramesHeader + " (";
  const size_t native = text.find(native_header);
  if (native == std::string::npos) return {"", text};
  const size_t native_text = text.find('\n', native + 1);
  const std::string python_header = std::string(msg::kPythonFramesHeader) + "\n";
  return {StartsWith(text, python_header) ? text.substr(python_header.size(), native - python_header.size()) : "",
          native_text == std::string::npos ? "" : text.substr(native_text + 1)};
}

// `  File "/x/stuck.py", line 12 in spin` -> "stuck.py:12 in spin"; "" when the line is not a frame.
std::string PythonFrameName(const std::string& line) {
  const std::string file = "  File \"", at = "\", line ", in = " in ";
  const size_t comma = line.rfind(at);
  if (!StartsWith(line, file) || comma == std::string::npos || comma < file.size()) return "";
  const size_t func = line.find(in, comma + at.size());
  if (func == std::string::npos) return "";
  std::string path = line.substr(file.size(), comma - file.size());
  if (const size_t slash = path.rfind('/'); slash != std::string::npos) path.erase(0, slash + 1);
  return fmt::format("{}:{} in {}", path, line.substr(comma + at.size(), func - comma - at.size()),
                     line.substr(func + in.size()));
}

std::string StepText(const std::vector<const HangStack*>& g) {
  int64_t lo = g.front()->step, hi = lo;
  for (const HangStack* s : g) lo = std::min(lo, s->step), hi = std::max(hi, s->step);
  if (lo < 0 && hi < 0) return "no step yet";
  return lo == hi ? fmt::format("step {}", lo) : fmt::format("steps {}-{}", lo, hi);
}

std::string Who(const std::vector<const HangStack*>& g) {
  std::vector<int32_t> ranks;
  std::vector<std::string> hosts;
  for (const HangStack* s : g) {
    ranks.push_back(s->rank);
    if (std::find(hosts.begin(), hosts.end(), s->host) == hosts.end()) hosts.push_back(s->host);
  }
  std::sort(ranks.begin(), ranks.end());
  std::string r;
  for (size_t i = 0; i < ranks.size(); ++i) r += (i ? ", " : "") + std::to_string(ranks[i]);
  return fmt::format("rank{} {} ({})", ranks.size() == 1 ? "" : "s", r, Join(hosts, ", "));
}

}  // namespace

std::vector<std::string> PythonMainFrames(const std::string& text) {
  std::vector<std::vector<std::string>> threads;
  for (const std::string& line : Split(SplitSections(text).python, '\n')) {
    if (line == "...") return {};  // more than faulthandler's 100 threads: the main one is not there
    if (StartsWith(line, "Thread 0x") || StartsWith(line, "Current thread 0x")) {
      threads.emplace_back();
      continue;
    }
    std::string f = PythonFrameName(line);
    if (f.empty()) continue;
    if (threads.empty()) threads.emplace_back();  // the dump's start was cut
    threads.back().push_back(std::move(f));
  }
  return threads.empty() ? std::vector<std::string>{} : threads.back();
}

std::vector<std::string> RankThreadFrames(const std::string& all) {
  const std::string text = SplitSections(all).native;
  // Each thread's frames; the first thread listed is the main one (eu-stack:
  // TID == PID; gdb: its bt, or Thread 1).
  const std::string training = std::string("(") + kTrainingThreadName + "):";       // eu-stack, named by the agent
  const std::string training_gdb = std::string("\"") + kTrainingThreadName + "\")";  // gdb's own
  std::vector<std::vector<std::string>> threads(1);
  size_t chosen = 0;
  bool named = false;
  for (const std::string& line : Split(text, '\n')) {
    if (IsThreadHeader(line)) {
      if (!threads.back().empty()) threads.emplace_back();
      if (!named && (line.find(training) != std::string::npos || line.find(training_gdb) != std::string::npos)) {
        chosen = threads.size() - 1;
        named = true;
      }
      continue;
    }
    std::string f = FrameName(line);
    if (!f.empty()) threads.back().push_back(std::move(f));
  }
  if (!named) chosen = threads.front().empty() && threads.size() > 1 ? 1 : 0;
  return threads[chosen];
}

std::string WhereOf(const HangStack& s) {
  if (s.tool.empty()) return fmt::format("no stack ({})", Printable(FirstLine(s.text)));
  auto shown = [](const std::string& f) { return Printable(f.size() > 120 ? f.substr(0, 117) + "..." : f); };
  if (const std::vector<std::string> python = PythonMainFrames(s.text); !python.empty()) return "in " + shown(python.front());
  const std::vector<std::string> frames = RankThreadFrames(s.text);
  if (frames.empty()) return "no frames";
  for (const std::string& f : frames) {
    if (IsWait(f)) continue;
    return f == frames.front() ? "in " + shown(f) : fmt::format("in {} (innermost: {})", shown(f), shown(frames.front()));
  }
  return "in " + shown(frames.front());
}

namespace {

// The ranks grouped by their normalised training (or main) thread -- a
// CPython rank's by its main thread's Python frames -- and last step (a rank
// stopped inside the collective everyone waits in reads like them, but it
// is a step behind), the largest group last (among equals the lowest rank
// last, so the odd ones print first).
std::vector<std::vector<const HangStack*>> Groups(const std::vector<HangStack>& stacks) {
  std::map<std::string, std::vector<const HangStack*>> by_stack;
  for (const HangStack& s : stacks) {
    const std::vector<std::string> python = PythonMainFrames(s.text);
    const std::string where = s.tool.empty()     ? "\x01" + WhereOf(s)
                              : !python.empty() ? "\x02" + Join(python, "\n")
                                                : Join(RankThreadFrames(s.text), "\n");
    by_stack[where + "\n@" + std::to_string(s.step)].push_back(&s);
  }
  std::vector<std::vector<const HangStack*>> groups;
  for (auto& [key, g] : by_stack) {
    std::sort(g.begin(), g.end(), [](const HangStack* a, const HangStack* b) { return a->rank < b->rank; });
    groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() < b.size() : a.front()->rank > b.front()->rank;
  });
  return groups;
}

}  // namespace

std::vector<std::string> HangReportLines(const std::vector<HangStack>& stacks) {
  const auto groups = Groups(stacks);
  std::vector<std::string> lines;
  if (groups.empty()) return lines;
  const auto& main = groups.back();
  for (size_t i = 0; i + 1 < groups.size(); ++i) {
    if (lines.size() == kMaxGroupLines) {
      lines.push_back(fmt::format("... and {} more group(s) of ranks", groups.size() - 1 - i));
      break;
    }
    lines.push_back(fmt::format("{}: {}, {}", Who(groups[i]), WhereOf(*groups[i].front()), StepText(groups[i])));
  }
  const std::string who = groups.size() == 1 ? fmt::format("all {} ranks", main.size())
                          : main.size() == 1 ? Who(main)
                                             : fmt::format("{} others", main.size());
  lines.push_back(fmt::format("{}: {}, {}", who, WhereOf(*main.front()), StepText(main)));
  return lines;
}

std::string OddHosts(const std::vector<HangStack>& stacks) {
  const auto groups = Groups(stacks);
  std::vector<std::string> hosts;
  for (size_t i = 0; i + 1 < groups.size(); ++i)
    for (const HangStack* s : groups[i])
      if (std::find(hosts.begin(), hosts.end(), s->host) == hosts.end()) hosts.push_back(s->host);
  return hosts.empty() ? "every node" : Join(hosts, ", ");
}

std::string StacksFileText(const std::vector<HangStack>& stacks) {
  std::string out;
  for (const HangStack& s : stacks) {
    out += fmt::format("=== rank {} ({}), step {}, {} ===\n", s.rank, s.host, s.step, s.tool.empty() ? "no stack" : s.tool);
    out += s.text;
    if (!s.text.empty() && s.text.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace ds
