// The per-node form on one machine without DSLAUNCH_SECRET_FILE, attacked
// and used as another local user and the user would (launcher/cmd/per_node.h,
// loopback_secret.h): a rogue coordinator run as nobody on the rendezvous
// port gets no node to run its command; node 0 listens on the address the
// rendezvous names only; nodes started in either order join with the secret
// node 0 publishes, which goes with node 0, and their lines are labelled
// with the host names the nodes report; a second node of one rank is told so.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A port nobody listens on now (the kernel's pick, released).
int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  socklen_t len = sizeof(sa);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// True when something accepts TCP connections at addr:port.
bool Accepts(const std::string& addr, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  ::close(fd);
  return ok;
}

// One machine, one user: a private XDG_RUNTIME_DIR of the test's.
struct Machine {
  Machine() : port(UnusedPort()) {
    ::chmod(dir.path().c_str(), 0711);  // nobody may pass through to its own folder
    std::filesystem::create_directory(dir / "xdg");
    ::chmod((dir / "xdg").c_str(), 0700);
  }
  std::vector<std::string> Node(int rank, int nnodes, const std::string& command) const {
    return {DslaunchPath(), "--nnodes", std::to_string(nnodes), "--node_rank", std::to_string(rank),
            "--nproc_per_node", "1", "--master_addr", "127.0.0.1", "--master_port", std::to_string(port),
            "--", "sh", "-c", command};
  }
  // Runs in a folder of its own, `name`, with its dslaunch.out and .err.
  Child Start(int rank, int nnodes, const std::string& command, const std::string& name) const {
    auto env = JobEnv(dir);
    env.emplace_back("XDG_RUNTIME_DIR", dir / "xdg");
    std::filesystem::create_directory(dir / name);
    return Spawn(Node(rank, nnodes, command), dir / name, env);
  }
  std::string SecretFile() const {
    return dir / ("xdg/dslaunch/per-node-127.0.0.1-" + std::to_string(port) + ".secret");
  }
  TempDir dir;
  int port;
};

TEST_CASE("per node trust: another user's listener on the rendezvous port cannot make a node run its command",
          "[integration]") {
  Machine m;
  const std::string loot = m.dir / "loot";  // nobody's own folder: the rogue logs there
  std::filesystem::create_directory(loot);
  ::chmod(loot.c_str(), 0777);
  Child rogue = Spawn({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", DSLAUNCH_TEST_ROGUE,
                       "127.0.0.1", std::to_string(m.port), loot + "/log", m.dir / "pwned"},
                      loot);
  REQUIRE(WaitForText(loot + "/log", "listening", seconds(30)));
  Child victim = m.Start(1, 2, "true", "victim");
  // Today's node 1 waits for node 0's secret; the old one connected at once
  // to whoever listened and ran what it was told (the marker, within a second).
  const bool waits = WaitForText(victim.err_path, "waiting for node 0 to publish the job secret", seconds(30));
  const bool pwned = WaitForText(m.dir / "pwned", "\n", milliseconds(1500));
  ::kill(victim.pid, SIGTERM);
  ::kill(rogue.pid, SIGKILL);
  CHECK(WaitExit(victim.pid, seconds(30)) != -1);
  WaitExit(rogue.pid, seconds(30));
  INFO(ReadFile(victim.err_path));
  INFO(ReadFile(loot + "/log"));
  CHECK_FALSE(pwned);
  CHECK(waits);
  CHECK(ReadFile(loot + "/log").find("auth ok") == std::string::npos);
}

TEST_CASE("per node trust: node 0 listens on the rendezvous address only, and its secret file goes with it",
          "[integration]") {
  Machine m;
  Child n0 = m.Start(0, 2, "true", "n0");
  REQUIRE(WaitForText(n0.err_path, "read a fresh job secret from " + m.SecretFile(), seconds(30)));
  struct stat st;
  REQUIRE(::lstat(m.SecretFile().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(Accepts("127.0.0.1", m.port));
  CHECK_FALSE(Accepts("127.0.0.2", m.port));  // 0.0.0.0 would take it: reachable from other machines
  ::kill(n0.pid, SIGTERM);
  CHECK(WaitExit(n0.pid, seconds(30)) == 128 + SIGTERM);
  CHECK_FALSE(std::filesystem::exists(m.SecretFile()));
}

TEST_CASE("per node trust: nodes in either order join with node 0's secret; a second node 1 is told it is one too many",
          "[integration]") {
  Machine m;
  // Rank 0 holds the job until the test writes to its FIFO.
  REQUIRE(::mkfifo((m.dir / "go").c_str(), 0600) == 0);
  const std::string work = "echo R=$RANK W=$WORLD_SIZE; [ $RANK = 0 ] || exit 0; read x < " + m.dir / "go";
  Child n1 = m.Start(1, 3, work, "n1");  // before node 0: it waits for the secret
  REQUIRE(WaitForText(n1.err_path, "waiting for node 0 to publish the job secret", seconds(30)));
  Child n0 = m.Start(0, 3, work, "n0");
  REQUIRE(WaitForText(n0.err_path, "read a fresh job secret", seconds(30)));
  Child n2 = m.Start(2, 3, work, "n2");  // after node 0: the secret is there
  REQUIRE(WaitForText(n0.out_path, "R=0 W=3", seconds(60)));
  Child again = m.Start(1, 3, work, "again");
  const int again_rc = WaitExit(again.pid, seconds(60));
  WriteFile(m.dir / "go", "go\n");  // blocks until rank 0 opens it
  CHECK(WaitExit(n0.pid, seconds(60)) == 0);
  CHECK(WaitExit(n1.pid, seconds(30)) == 0);
  CHECK(WaitExit(n2.pid, seconds(30)) == 0);
  const std::string out = ReadFile(n0.out_path);
  INFO(out);
  // Each line is labelled with the host name its node's agent reported (all
  // three are this machine here), not the plan's placeholder (node1:1).
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  CHECK(out.find(std::string(host) + ":0 R=0 W=3") != std::string::npos);
  CHECK(out.find(std::string(host) + ":1 R=1 W=3") != std::string::npos);
  CHECK(out.find(std::string(host) + ":2 R=2 W=3") != std::string::npos);
  INFO(ReadFile(again.err_path));
  CHECK(again_rc == 3);
  CHECK(ReadFile(again.err_path).find("node 1 already joined this job (is its node rank given to two nodes?)") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(m.SecretFile()));
}

}  // namespace
}  // namespace ds::testing
