// Descendant tracking by /proc (descendants.h). Linux only, like the rest of
// the agent.
#include "agent/workers/descendants.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <fmt/format.h>

namespace ds {
namespace {

// ppid and state of `pid` from /proc/<pid>/stat; false when it is gone.
bool ReadStat(pid_t pid, pid_t* ppid, char* state) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');  // the command name may hold ')' and spaces
  if (!close) return false;
  int pp = 0;
  if (std::sscanf(close + 1, " %c %d", state, &pp) != 2) return false;
  *ppid = pp;
  return true;
}

// Every process in /proc, by parent: the fallback for kernels without
// CONFIG_PROC_CHILDREN (costs a read per process on the machine).
std::multimap<pid_t, pid_t> AllChildren() {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid, live ones only
  DIR* d = ::opendir("/proc");
  if (!d) return children;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    pid_t ppid = 0;
    char state = 0;
    if (ReadStat(static_cast<pid_t>(pid), &ppid, &state) && state != 'Z' && state != 'X')
      children.emplace(ppid, static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return children;
}

// The children of `pid` from /proc/<pid>/task/<tid>/children (every thread's);
// nullopt when the kernel has no such file.
std::optional<std::vector<pid_t>> ChildrenOf(pid_t pid) {
  const std::string task = fmt::format("/proc/{}/task", pid);
  DIR* d = ::opendir(task.c_str());
  if (!d) return std::vector<pid_t>{};  // gone
  std::vector<pid_t> out;
  bool supported = true;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    FILE* f = std::fopen((task + "/" + e->d_name + "/children").c_str(), "re");
    if (!f) {
      supported = supported && errno != ENOENT;
      continue;
    }
    for (int child; std::fscanf(f, "%d", &child) == 1;) out.push_back(child);
    std::fclose(f);
  }
  ::closedir(d);
  if (!supported) return std::nullopt;
  return out;
}

}  // namespace

Status BecomeSubreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return Status::IOError(fmt::format("prctl(PR_SET_CHILD_SUBREAPER): {}", std::strerror(errno)));
  return Status::OK();
}

// Walks the tree from `root` through the children files: the cost is the
// size of the job's own tree, not of the machine's process table.
std::vector<pid_t> LiveDescendants(pid_t root, const std::set<pid_t>& spare) {
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  std::optional<std::multimap<pid_t, pid_t>> all;  // only without children files
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    std::vector<pid_t> kids;
    if (auto c = all ? std::nullopt : ChildrenOf(p)) {
      kids = std::move(*c);
    } else {
      if (!all) all = AllChildren();
      auto [b, e] = all->equal_range(p);
      for (auto it = b; it != e; ++it) kids.push_back(it->second);
    }
    for (pid_t k : kids) {
      pid_t ppid = 0;
      char state = 0;
      if (spare.count(k) || !ReadStat(k, &ppid, &state) || state == 'Z' || state == 'X') continue;
      out.push_back(k);
      todo.push_back(k);
    }
  }
  return out;
}

int KillDescendants(const std::set<pid_t>& spare) {
  std::set<pid_t> killed;
  int quiet_scans = 0;
  for (int round = 0; round < 100 && quiet_scans < 2; ++round) {
    bool fresh = false;
    for (pid_t p : LiveDescendants(::getpid(), spare)) {
      if (!killed.insert(p).second) continue;
      ::kill(p, SIGKILL);
      fresh = true;
    }
    quiet_scans = fresh ? 0 : quiet_scans + 1;
  }
  return static_cast<int>(killed.size());
}

}  // namespace ds
