// A real 3-node x 2-slot job on 127.0.0.1..3: dslaunch + three dsagents +
// six workers, checked from the outside.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/strings.h"
#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

const std::vector<std::pair<std::string, std::string>> kQuiet = {{"DSLAUNCH_COLOR", "never"}};

TEST_CASE("launch: 3x2 local job, every rank once, consistent torchrun env, values byte for byte",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 3, 2);
  WriteFile(dir / "worker.sh",
            "printf '%s' \"$TRICKY\" > \"tricky.$RANK\"\n"
            "printf '%s' \"$DOTVAL\" > \"dot.$RANK\"\n"
            "echo \"ENV $RANK $LOCAL_RANK $GROUP_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT "
            "$DSLAUNCH_HOST $NCCL_SOCKET_IFNAME $DSLAUNCH_STORE_ADDR\"\n");
  WriteFile(dir / ".dslaunch_env",
            "# comment\n\nexport DOTVAL=\"line1\\nline2 $NOT_EXPANDED 'single'\"\nTRICKY=overridden-by-job\n");
  WriteFile(dir / "job.yaml",
            "command: [sh, worker.sh]\n"
            "env:\n"
            "  TRICKY: 'it''s \"quoted\"  $HOME  `x` \\ end'\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
  std::string out = ReadFile(c.out_path);
  INFO(out << ReadFile(c.err_path));
  REQUIRE(code == 0);

  std::map<int, std::vector<std::string>> by_rank;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto f = Split(line, ' ');
    if (f.size() < 2 || f[1] != "ENV") continue;
    int rank = static_cast<int>(*ParseInt(f[2]));
    CHECK(by_rank.count(rank) == 0);  // exactly once
    by_rank[rank] = f;
    CHECK(f[0] == f[9] + ":" + std::to_string(rank));
  }
  REQUIRE(by_rank.size() == 6);
  std::set<std::string> masters;
  std::string rank0_master;
  for (const auto& [rank, f] : by_rank) {
    CHECK(*ParseInt(f[3]) == rank % 2);   // LOCAL_RANK
    CHECK(*ParseInt(f[4]) == rank / 2);   // GROUP_RANK
    CHECK(f[5] == "6");                   // WORLD_SIZE
    CHECK(f[6] == "2");                   // LOCAL_WORLD_SIZE
    CHECK(f[9] == "127.0.0." + std::to_string(rank / 2 + 1));
    CHECK(f[10] == "lo");
    // Rank 0's store listens on a port of its own behind the relay on MASTER_PORT.
    if (rank == 0) rank0_master = f[7] + ":" + f[8];
    else masters.insert(f[7] + ":" + f[8]);
    CHECK(!f[11].empty());
  }
  REQUIRE(masters.size() == 1);
  CHECK(masters.begin()->rfind("127.0.0.1:", 0) == 0);
  CHECK(rank0_master.rfind("127.0.0.1:", 0) == 0);
  CHECK(rank0_master != *masters.begin());
  for (int r = 0; r < 6; ++r) {
    CHECK(ReadFile(dir / ("tricky." + std::to_string(r))) == "it's \"quoted\"  $HOME  `x` \\ end");
    CHECK(ReadFile(dir / ("dot." + std::to_string(r))) == "line1\nline2 $NOT_EXPANDED 'single'");
  }
  CHECK(ReadFile(c.err_path).find("all 6 workers exited 0") != std::string::npos);
}

TEST_CASE("launch: a worker exiting 3 ends dslaunch with 3 and names host and rank", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 3, 2);
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c",
                  "if [ \"$RANK\" = 3 ]; then echo about to fail; exit 3; fi; exec sleep 60"},
                 dir.path(), &c, seconds(60), JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == 3);
  CHECK(err.find("host 127.0.0.2, rank 3, pid ") != std::string::npos);
  CHECK(err.find(": exited with code 3") != std::string::npos);
  CHECK(err.find("    | about to fail") != std::string::npos);
  CHECK(err.find("dslaunch: exit code 3") != std::string::npos);
}

TEST_CASE("launch: a SIGKILLed worker ends dslaunch with 137 and names the signal", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 3, 2);
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c",
                  "if [ \"$RANK\" = 4 ]; then kill -9 $$; fi; exec sleep 60"},
                 dir.path(), &c, seconds(60), JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == 137);
  CHECK(err.find("host 127.0.0.3, rank 4") != std::string::npos);
  CHECK(err.find("killed by signal 9 (SIGKILL)") != std::string::npos);
}

void SignalDslaunchAndCheck(int sig, int expected_code, bool expect_summary) {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 3, 2);
  std::string pids = dir / "pids";
  // Each worker also starts a grandchild in its process group.
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c",
                   "sleep 60 & echo $! >> " + pids + "; echo $$ >> " + pids + "; wait"},
                  dir.path(), JobEnv(dir));
  auto started = WaitForPids(pids, 12, seconds(30));
  REQUIRE(started.size() == 12);
  REQUIRE(::kill(c.pid, sig) == 0);
  int code = WaitExit(c.pid, seconds(30));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == expected_code);
  // Generous bound: agents notice a lost coordinator at once (EOF) or within
  // the heartbeat timeout (5 s default) plus the stop grace.
  CHECK(AllGone(started, seconds(15)));
  if (expect_summary) CHECK(err.find("every worker was stopped") != std::string::npos);
}

TEST_CASE("launch: SIGINT to dslaunch stops every process of the job", "[integration]") {
  SignalDslaunchAndCheck(SIGINT, 130, true);
}

TEST_CASE("launch: SIGTERM to dslaunch stops every process of the job", "[integration]") {
  SignalDslaunchAndCheck(SIGTERM, 143, true);
}

TEST_CASE("launch: SIGKILL to dslaunch -> agents kill their workers", "[integration]") {
  SignalDslaunchAndCheck(SIGKILL, 137, false);
}

TEST_CASE("launch: per-rank log files under --log-dir", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--log-dir", dir / "logs", "--", "/bin/sh", "-c",
                  "echo out $RANK; echo err $RANK >&2"},
                 dir.path(), &c, seconds(60), JobEnv(dir));
  REQUIRE(code == 0);
  CHECK(ReadFile(dir / "logs/rank0.stdout.log") == "out 0\n");
  CHECK(ReadFile(dir / "logs/rank0.stderr.log") == "err 0\n");
  CHECK(ReadFile(dir / "logs/rank1.stdout.log") == "out 1\n");
  CHECK(ReadFile(dir / "logs/rank1.stderr.log") == "err 1\n");
}

// tqdm's way: carriage-return updates, paced so that they reach dslaunch one
// by one. Not a terminal (files here): only the finished line, prefixed, and
// the per-rank files the same without a prefix.
TEST_CASE("launch: carriage-return progress shows off a terminal as its final line, prefixed", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  Child c;
  REQUIRE(Run({DslaunchPath(), "--hostfile", hostfile, "--log-dir", dir / "logs", "--", "/bin/sh", "-c",
               "for i in $(seq 1 30); do printf '\\r%d%%' $i; printf '\\r%d%%|##' $i >&2; sleep 0.01; done; "
               "echo; echo >&2; echo done"},
              dir.path(), &c, seconds(60), JobEnv(dir)) == 0);
  CHECK(ReadFile(c.out_path) == "127.0.0.1:0 30%\n127.0.0.1:0 done\n");
  const std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(err.find("127.0.0.1:0 30%|##\n") != std::string::npos);
  CHECK(err.find('\r') == std::string::npos);
  CHECK(ReadFile(dir / "logs/rank0.stdout.log") == "30%\ndone\n");
  CHECK(ReadFile(dir / "logs/rank0.stderr.log") == "30%|##\n");
}

// --pty: each worker's stdout and stderr are terminals of their own (the
// streams stay apart), raw (no "\r\n"), sized from the launcher's terminal
// (80 x 24 off one), with a TERM although the job set none; the ranks' lines
// arrive whole, the last one without a newline included. Without --pty:
// pipes.
TEST_CASE("launch: --pty gives each worker's stdout and stderr a terminal of their own", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  const std::string probe =
      "if [ -t 1 ]; then echo \"out tty $(stty size <&2) $TERM\"; else echo out pipe; fi; "
      "if [ -t 2 ]; then echo err tty >&2; else echo err pipe >&2; fi; printf 'last'";
  auto env = JobEnv(dir);
  env.emplace_back("TERM", "vt220");
  Child c;
  REQUIRE(Run({DslaunchPath(), "--hostfile", hostfile, "--pty", "--log-dir", dir / "logs", "--", "/bin/sh", "-c",
               probe},
              dir.path(), &c, seconds(60), env) == 0);
  const std::string out = ReadFile(c.out_path), err = ReadFile(c.err_path);
  INFO(out << err);
  CHECK(out.find("127.0.0.1:0 out tty 24 80 vt220\n") != std::string::npos);
  CHECK(out.find("127.0.0.1:1 out tty 24 80 vt220\n") != std::string::npos);
  CHECK(out.find("127.0.0.1:1 last\n") != std::string::npos);
  CHECK(err.find("127.0.0.1:0 err tty\n") != std::string::npos);
  CHECK(out.find('\r') == std::string::npos);
  CHECK(ReadFile(dir / "logs/rank0.stdout.log") == "out tty 24 80 vt220\nlast\n");
  CHECK(ReadFile(dir / "logs/rank0.stderr.log") == "err tty\n");

  Child p;
  REQUIRE(Run({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c", probe}, dir.path(), &p, seconds(60),
              env) == 0);
  CHECK(ReadFile(p.out_path).find("127.0.0.1:0 out pipe\n") != std::string::npos);
  CHECK(ReadFile(p.err_path).find("127.0.0.1:0 err pipe\n") != std::string::npos);
}

// `2>/dev/null` hides workers' tracebacks, as it does under torchrun: a
// worker's stdout reaches dslaunch's stdout, its stderr dslaunch's stderr.
TEST_CASE("launch: a worker's stdout and stderr stay apart; -r keeps a stream off the terminal", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  const std::vector<std::string> job = {"--", "/bin/sh", "-c", "echo out $RANK; echo err $RANK >&2"};
  Child c;
  std::vector<std::string> argv = {DslaunchPath(), "--hostfile", hostfile};
  argv.insert(argv.end(), job.begin(), job.end());
  REQUIRE(Run(argv, dir.path(), &c, seconds(60), JobEnv(dir)) == 0);
  std::string out = ReadFile(c.out_path), err = ReadFile(c.err_path);
  CHECK(out.find(":0 out 0\n") != std::string::npos);
  CHECK(out.find("err") == std::string::npos);
  CHECK(err.find(":1 err 1\n") != std::string::npos);
  CHECK(err.find("out 1") == std::string::npos);

  // -r 0:2: local rank 0's stderr only in its file, in a fresh directory named on stderr.
  Child r;
  argv = {DslaunchPath(), "--hostfile", hostfile, "-r", "0:2"};
  argv.insert(argv.end(), job.begin(), job.end());
  REQUIRE(Run(argv, dir.path(), &r, seconds(60), JobEnv(dir)) == 0);
  out = ReadFile(r.out_path);
  err = ReadFile(r.err_path);
  INFO(err);
  CHECK(err.find("err 0") == std::string::npos);
  CHECK(err.find(":1 err 1\n") != std::string::npos);
  const std::string named = "dslaunch: -r: per-rank files in ";
  const size_t at = err.find(named);
  REQUIRE(at != std::string::npos);
  const std::string logs = err.substr(at + named.size(), err.find('\n', at) - at - named.size());
  CHECK(ReadFile(logs + "/rank0.stderr.log") == "err 0\n");
  CHECK(ReadFile(logs + "/rank0.stdout.log") == "out 0\n");
  std::filesystem::remove_all(logs);
}

TEST_CASE("launch: a command that does not exist fails with 127 and says why", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--", "/no/such/program"}, dir.path(), &c,
                 seconds(60), JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(code == 127);
  CHECK(err.find("cannot run '/no/such/program': No such file or directory") != std::string::npos);
}

}  // namespace
}  // namespace ds::testing

namespace ds::testing {
namespace {

TEST_CASE("launch: a frozen dslaunch (SIGSTOP) -> agents miss heartbeats and kill their workers",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  std::string pids = dir / "pids";
  WriteFile(dir / "job.yaml",
            "command: [/bin/sh, -c, 'echo $$ >> " + pids + "; exec sleep 60']\n"
            "elastic:\n  heartbeat_interval: 200ms\n  heartbeat_timeout: 1s\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  auto started = WaitForPids(pids, 2, seconds(30));
  REQUIRE(started.size() == 2);
  REQUIRE(::kill(c.pid, SIGSTOP) == 0);
  bool gone = AllGone(started, seconds(10));  // heartbeat timeout 1 s + grace
  ::kill(c.pid, SIGKILL);
  ::kill(c.pid, SIGCONT);
  WaitExit(c.pid, seconds(10));
  CHECK(gone);
}

TEST_CASE("launch: a SIGKILLed agent -> its node is lost, the job stops and exits 1", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  std::string pids = dir / "pids";
  // Each worker records its agent (parent) and itself.
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c",
                   "echo $PPID $$ >> " + pids + "; exec sleep 60"},
                  dir.path(), JobEnv(dir));
  auto ids = WaitForPids(pids, 4, seconds(30));
  REQUIRE(ids.size() == 4);
  REQUIRE(::kill(ids[0], SIGKILL) == 0);  // the first worker's agent
  int code = WaitExit(c.pid, seconds(30));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == 1);
  CHECK(err.find("agent lost: connection closed by peer") != std::string::npos);
  CHECK(AllGone({ids[1], ids[3]}, seconds(10)));
}

}  // namespace
}  // namespace ds::testing

namespace ds::testing {
namespace {

TEST_CASE("launch: a worker whose step heartbeat stalls past hang_timeout is named, with every rank's stacks first",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  // Rank 1 beats (the StepHeartbeat datagram: big-endian rank, step, its
  // DSLAUNCH_HEARTBEAT_TOKEN) and then stalls.
  WriteFile(dir / "worker.py",
            "import os, socket, struct, time\n"
            "host, port = os.environ['DSLAUNCH_HEARTBEAT_ADDR'].rsplit(':', 1)\n"
            "rank = int(os.environ['RANK'])\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "token = os.environ['DSLAUNCH_HEARTBEAT_TOKEN'].encode()\n"
            "s.sendto(struct.pack('>qq', rank, 1) + token, (host, int(port)))\n"
            "print('step 1 done', flush=True)\n"
            "time.sleep(60)\n");
  WriteFile(dir / "job.yaml",
            "command: [python3, worker.py]\n"
            "elastic:\n  hang_timeout: 1s\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(code == 137);
  // Both ranks beat once and sleep: the agent names the first it finds silent.
  CHECK(err.find("made no step for 1000 ms; every rank's stacks are taken before the job is stopped") !=
        std::string::npos);
  CHECK(err.find("made no step for 1 s (elastic.hang_timeout); taking every rank's stacks") != std::string::npos);
  CHECK(err.find("hang stacks, generation 0") != std::string::npos);  // taken before the stop
}

}  // namespace
}  // namespace ds::testing

namespace ds::testing {
namespace {

TEST_CASE("launch: MASTER_PORT is free for rank 0 to bind when the workers start", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  WriteFile(dir / "worker.py",
            "import os, socket\n"
            "if os.environ['RANK'] == '0':\n"
            "    s = socket.socket()\n"
            "    s.bind((os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT'])))\n"
            "    s.listen(1)\n"
            "    print('bound', os.environ['MASTER_PORT'], flush=True)\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--", "python3", "worker.py"}, dir.path(), &c,
                 seconds(60), JobEnv(dir));
  INFO(ReadFile(c.err_path) << ReadFile(c.out_path));
  CHECK(code == 0);
  CHECK(ReadFile(c.out_path).find("127.0.0.1:0 bound ") != std::string::npos);
}

TEST_CASE("launch: a --master_port already in use fails the launch and says so", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  // Hold a port ourselves (no SO_REUSEADDR games: a listening socket).
  WriteFile(dir / "hold.py",
            "import socket, sys, time\n"
            "s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen(1)\n"
            "open(sys.argv[1], 'w').write(str(s.getsockname()[1]))\n"
            "time.sleep(60)\n");
  Child holder = Spawn({"/usr/bin/env", "python3", dir / "hold.py", dir / "port"}, dir.path());
  std::string port;
  for (int i = 0; i < 2000 && port.empty(); ++i) {
    port = ReadFile(dir / "port");
    ::usleep(5000);
  }
  REQUIRE(!port.empty());
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "--master_port", port, "--", "true"}, dir.path(), &c,
                 seconds(60), JobEnv(dir));
  ::kill(holder.pid, SIGKILL);
  WaitExit(holder.pid, seconds(10));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code == 1);
  // Said once, by the summary (a warning line said it first, word for word).
  const std::string said = "MASTER_PORT reservation failed: bind 0.0.0.0:" + port + ": Address already in use";
  CHECK(err.find(said) != std::string::npos);
  CHECK(err.find(said) == err.rfind(said));
  const size_t failed = err.find("dslaunch: job failed; first failure at ");
  CHECK(failed == 0);
  CHECK(err.substr(err.find('\n') + 1) == "  host 127.0.0.1: " + said + "\ndslaunch: exit code 1\n");
}

}  // namespace
}  // namespace ds::testing
