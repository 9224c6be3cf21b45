// No descriptor leaks into the job's processes (issue 26 item 5): a real
// local job (dslaunch -> dsagent -> worker), looked at from the outside
// while the worker waits on a FIFO. The worker holds 0, 1 and 2 only, and
// neither it nor its agent holds dslaunch's listening socket (the
// coordinator and store port): a daemon a worker leaves behind can never
// keep that port, or accept the agents' connections on it, after dslaunch
// is gone. This test process itself runs with descriptors open that are not
// close-on-exec (the harness's output files): they must not get through
// either.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "proc_harness.h"
#include "tests/test_util/wait_until.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// fd number -> what it points to ("socket:[123]", "/dev/null", ...), of `pid`.
std::map<int, std::string> Descriptors(pid_t pid) {
  std::map<int, std::string> fds;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    auto n = ParseInt(e.path().filename().string());
    std::error_code lec;
    auto target = std::filesystem::read_symlink(e.path(), lec);
    if (n && !lec) fds[static_cast<int>(*n)] = target.string();
  }
  return fds;
}

// The inodes of the TCP sockets in LISTEN state on this machine (/proc/net/tcp{,6}).
std::set<std::string> ListeningInodes() {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state == "0A") inodes.insert(inode);
    }
  }
  return inodes;
}

// The "socket:[N]" targets among `fds` that are listening sockets.
std::set<std::string> ListeningSockets(const std::map<int, std::string>& fds) {
  const std::set<std::string> listening = ListeningInodes();
  std::set<std::string> out;
  for (const auto& [fd, target] : fds)
    if (StartsWith(target, "socket:[") && listening.count(target.substr(8, target.size() - 9))) out.insert(target);
  return out;
}

std::string Describe(const std::map<int, std::string>& fds) {
  std::string s;
  for (const auto& [fd, target] : fds) s += std::to_string(fd) + " -> " + target + "\n";
  return s;
}

// The process's state letter and parent, from /proc/PID/stat ("" and -1 when gone).
std::pair<std::string, pid_t> StateAndParent(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (stat.rfind(')') == std::string::npos) return {"", -1};
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
  std::string state;
  long ppid = -1;
  rest >> state >> ppid;
  return {state, static_cast<pid_t>(ppid)};
}

pid_t ParentOf(pid_t pid) { return StateAndParent(pid).second; }

// Once `pid` is cat asleep (blocked opening the fifo): while it starts, it
// briefly holds the locale's files.
bool CatAsleep(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  comm >> name;
  return name == "cat" && StateAndParent(pid).first == "S";
}

TEST_CASE("descriptors: a worker holds only 0, 1 and 2; neither it nor its agent holds dslaunch's listening socket",
          "[integration]") {
  TempDir dir;
  REQUIRE(::mkfifo((dir / "go").c_str(), 0600) == 0);
  // `sh -c`, not a script file: dash keeps a script open on a descriptor of its own.
  WriteFile(dir / "job.yaml",
            "command: [sh, -c, 'echo $$ > pid.tmp && mv pid.tmp pid && exec cat go']\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "job.yaml"}, dir.path(), JobEnv(dir));
  auto pids = WaitForPids(dir / "pid", 1, seconds(30));
  std::map<int, std::string> worker, agent, launcher;
  std::set<std::string> dslaunch_listens;  // the coordinator's port, seen while the job runs
  pid_t agent_pid = -1;
  if (pids.size() == 1) {
    CHECK(WaitUntil([&] { return CatAsleep(pids[0]); }, seconds(10)));
    worker = Descriptors(pids[0]);
    agent_pid = ParentOf(pids[0]);
    agent = Descriptors(agent_pid);
    launcher = Descriptors(c.pid);
    dslaunch_listens = ListeningSockets(launcher);
  }
  // Let the worker end (the open blocks until cat opens its end), whatever was found.
  if (pids.size() == 1) {
    int go = ::open((dir / "go").c_str(), O_WRONLY | O_CLOEXEC);
    if (go >= 0) ::close(go);
  }
  const int code = WaitExit(c.pid, seconds(30));
  INFO("dslaunch's stderr:\n" << ReadFile(c.err_path));
  REQUIRE(pids.size() == 1);
  CHECK(code == 0);

  INFO("dslaunch (pid " << c.pid << "):\n" << Describe(launcher));
  INFO("the worker (pid " << pids[0] << "):\n" << Describe(worker));
  INFO("its agent (pid " << agent_pid << "):\n" << Describe(agent));
  REQUIRE_FALSE(dslaunch_listens.empty());
  std::set<int> numbers;
  for (const auto& [fd, target] : worker) numbers.insert(fd);
  CHECK(numbers == std::set<int>{0, 1, 2});
  for (const std::string& sock : dslaunch_listens) {
    for (const auto& [fd, target] : worker) CHECK(target != sock);
    for (const auto& [fd, target] : agent) CHECK(target != sock);
  }
}

}  // namespace
}  // namespace ds::testing
