// Elastic restart with real processes on 127.0.0.1..2 (coordinator.h): a
// failed worker or a lost node starts generation + 1 on the nodes left, with
// renumbered ranks and a fresh MASTER_PORT, until elastic.max_restarts is used
// up or fewer than elastic.min_nodes remain. Checked from the outside.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "proc_harness.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// Lines "GEN <generation> <restart count> <rank> <world size> <master port>".
std::set<std::string> GenLines(const std::string& out, std::set<std::string>* ports = nullptr) {
  std::set<std::string> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto at = line.find(" GEN ");
    if (at == std::string::npos) continue;
    auto f = Split(line.substr(at + 1), ' ');
    if (f.size() != 6) continue;
    lines.insert(f[1] + " " + f[2] + " " + f[3] + " " + f[4]);
    if (ports && f[3] != "0") ports->insert(f[1] + ":" + f[5]);  // rank 0's store has a port of its own
  }
  return lines;
}

// Direct children of `parent` whose command line contains `needle`.
std::vector<pid_t> ChildrenOf(pid_t parent, const std::string& needle = "") {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream cmd("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string argv((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (argv.find(needle) != std::string::npos) out.push_back(pid);
  }
  closedir(d);
  return out;
}

struct Outcome {
  int code;
  std::string out, err;
};

// Writes worker.sh and job.yaml into `dir` and runs dslaunch on `nodes`
// local nodes (127.0.0.1, ...) of `slots` slots to the end.
Outcome RunJob(const TempDir& dir, int nodes, int slots, const std::string& worker,
               const std::string& job) {
  WriteFile(dir / "worker.sh", worker);
  WriteFile(dir / "job.yaml", job);
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", HostfileFor(dir, nodes, slots), "job.yaml"}, dir.path(),
                 &c, seconds(60), JobEnv(dir));
  return {code, ReadFile(c.out_path), ReadFile(c.err_path)};
}

// A worker that kills its own agent may take its last lines with it: the agent
// relays them. Tests where generation 0's rank 1 does that ignore its line.
const std::string kLostLine = "0 0 1 2";

// Every worker reports; rank 1 then waits until rank 0 of its generation has
// reported too, so that a failure of rank 1 cannot stop rank 0 unreported.
const char* kReport =
    "echo GEN $DSLAUNCH_GENERATION $DSLAUNCH_RESTART_COUNT $RANK $WORLD_SIZE $MASTER_PORT\n"
    "[ $RANK = 0 ] && touch reported.$DSLAUNCH_GENERATION\n"
    "[ $RANK = 1 ] && while [ ! -e reported.$DSLAUNCH_GENERATION ]; do sleep 0.02; done\n";

TEST_CASE("elastic: a failed worker restarts the job on every node, which then succeeds",
          "[integration]") {
  TempDir dir;
  auto [code, out, err] = RunJob(dir, 2, 1, std::string(kReport) +
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && exit 3\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 2}\n");
  std::set<std::string> ports;
  auto gens = GenLines(out, &ports);
  INFO(err << out);
  CHECK(code == 0);
  CHECK(gens == std::set<std::string>{"0 0 0 2", "0 0 1 2", "1 1 0 2", "1 1 1 2"});
  CHECK(ports.size() == 2);  // one MASTER_PORT per generation, the same for all its ranks but rank 0
  CHECK(err.find("dslaunch: restart 1/2: generation 1 on 2 nodes, world size 2, after host "
                 "127.0.0.2, rank 1, pid ") != std::string::npos);
  CHECK(err.find("dslaunch: all 2 workers exited 0, after 1 restart\n") != std::string::npos);
  CHECK(err.find("dslaunch: generation 1: all 2 workers running, ") != std::string::npos);
  CHECK(err.find(" s after the failure\n") != std::string::npos);
  CHECK(err.find(": host 127.0.0.2, rank 1, pid ") != std::string::npos);
  CHECK(err.find("exited with code 3") != std::string::npos);
}

TEST_CASE("elastic: a lost node -> the job restarts on the survivor with a smaller world",
          "[integration]") {
  TempDir dir;
  std::string pids = dir / "pids";
  // Generation 0: rank 1 kills its own agent (the node is lost), rank 0 waits.
  auto [code, out, err] = RunJob(dir, 2, 1, "echo $PPID $$ >> " + pids + "\n" + kReport +
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && { kill -9 $PPID; exit 0; }\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 1, min_nodes: 1}\n");
  auto gens = GenLines(out);
  INFO(err << out);
  CHECK(code == 0);
  gens.erase(kLostLine);
  CHECK(gens == std::set<std::string>{"0 0 0 2", "1 1 0 1"});
  CHECK(err.find("generation 1 on 1 node, world size 1") != std::string::npos);
  CHECK(err.find("host 127.0.0.2: agent lost: connection closed by peer") != std::string::npos);
  auto ids = WaitForPids(pids, 6, seconds(5));  // 3 workers: agent pid, own pid
  CHECK(ids.size() == 6);
  CHECK(AllGone(ids, seconds(10)));
}

TEST_CASE("elastic: losing node 0 moves MASTER_ADDR and the MASTER_PORT reservation to the next node",
          "[integration]") {
  TempDir dir;
  // Generation 0: rank 0 (node 0, the master) kills its own agent once rank 1
  // has printed its MASTER line.
  auto [code, out, err] = RunJob(dir, 2, 1, std::string(kReport) +
                                 "echo MASTER $DSLAUNCH_GENERATION $MASTER_ADDR\n"
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && touch master-seen\n"
                                 "[ $RANK = 0 ] && { while [ ! -e master-seen ]; do sleep 0.02; done; "
                                 "kill -9 $PPID; exit 0; }\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 1}\n");
  INFO(err << out);
  CHECK(code == 0);
  CHECK(out.find("127.0.0.2:0 GEN 1 1 0 1 ") != std::string::npos);  // node 1 is node 0 now
  CHECK(out.find("MASTER 1 127.0.0.2") != std::string::npos);
  CHECK(err.find("generation 1 on 1 node, world size 1, after host 127.0.0.1: agent lost") !=
        std::string::npos);
}

TEST_CASE("elastic: a standby steps in for a lost node and keeps the world size", "[integration]") {
  TempDir dir;
  // max_nodes 2: 127.0.0.3 is the standby
  auto [code, out, err] = RunJob(dir, 3, 1, std::string(kReport) +
                                 "echo HOST $DSLAUNCH_GENERATION $RANK $DSLAUNCH_HOST\n"
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && { kill -9 $PPID; exit 0; }\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 1, max_nodes: 2}\n");
  INFO(err << out);
  CHECK(code == 0);
  auto gens = GenLines(out);
  gens.erase(kLostLine);
  CHECK(gens == std::set<std::string>{"0 0 0 2", "1 1 0 2", "1 1 1 2"});
  CHECK(out.find("HOST 1 1 127.0.0.3") != std::string::npos);  // the standby is rank 1 now
  CHECK(out.find("127.0.0.3:0") == std::string::npos);         // and ran nothing before
  CHECK(err.find("restart 1/1: generation 1 on 2 nodes, world size 2, after host 127.0.0.2: agent lost") !=
        std::string::npos);
}

TEST_CASE("elastic: losing an idle standby does not disturb the job", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 3, 1);
  // Rank 0 waits until the test has killed the standby's agent.
  WriteFile(dir / "worker.sh", std::string(kReport) +
                                   "[ $RANK = 0 ] && while [ ! -e standby-killed ]; do sleep 0.02; done\n"
                                   "exit 0\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\nelastic: {max_restarts: 1, max_nodes: 2}\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  std::vector<pid_t> standby;
  for (int i = 0; i < 500 && standby.empty(); ++i) {
    if (std::filesystem::exists(dir / "reported.0"))
      standby = ChildrenOf(c.pid, std::string("--node-index") + '\0' + "2" + '\0');
    if (standby.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(standby.size() == 1);
  ::kill(standby[0], SIGKILL);
  CHECK(WaitForText(c.err_path, "standby 127.0.0.3 lost", seconds(30)));  // dslaunch noticed
  WriteFile(dir / "standby-killed", "");
  int code = WaitExit(c.pid, seconds(60));
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(code == 0);
  CHECK(err.find("dslaunch: standby 127.0.0.3 lost (connection closed by peer)\n") != std::string::npos);
  CHECK(err.find("all 2 workers exited 0\n") != std::string::npos);
  CHECK(err.find("restart") == std::string::npos);
}

TEST_CASE("elastic: a lost node rejoins and takes part again from the next restart",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  // Generation 0: rank 1 kills its agent. Generation 1 (node 0 alone): rank 0
  // fails once the test has seen node 1 rejoin. Generation 2: both nodes.
  WriteFile(dir / "worker.sh", std::string(kReport) +
                                   "case $DSLAUNCH_GENERATION-$RANK in\n"
                                   "  0-1) kill -9 $PPID; exit 0;;\n"
                                   "  0-0) exec sleep 30;;\n"
                                   "  1-0) while [ ! -e rejoined ]; do sleep 0.02; done; exit 7;;\n"
                                   "esac\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\nelastic: {max_restarts: 2}\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  const bool rejoined =
      WaitForText(c.err_path, "dslaunch: 127.0.0.2 rejoined; it takes part from the next restart", seconds(15));
  WriteFile(dir / "rejoined", "");
  int code = WaitExit(c.pid, seconds(60));
  std::string err = ReadFile(c.err_path);
  INFO(err << ReadFile(c.out_path));
  CHECK(rejoined);
  CHECK(code == 0);
  auto gens = GenLines(ReadFile(c.out_path));
  gens.erase(kLostLine);
  CHECK(gens == std::set<std::string>{"0 0 0 2", "1 1 0 1", "2 2 0 2", "2 2 1 2"});
  CHECK(err.find("restart 2/2: generation 2 on 2 nodes, world size 2, after host 127.0.0.1, rank 0") !=
        std::string::npos);
}

TEST_CASE("elastic: a hung worker (step heartbeat stalled past hang_timeout) restarts the job",
          "[integration]") {
  TempDir dir;
  // Generation 0: rank 1 beats once (the StepHeartbeat datagram: big-endian
  // rank, step, its DSLAUNCH_HEARTBEAT_TOKEN) and stalls; generation 1
  // succeeds. The worker is Python.
  auto [code, out, err] = RunJob(
      dir, 1, 2,
      "import os, socket, struct, sys, time\n"
      "print('GEN', os.environ['DSLAUNCH_GENERATION'], os.environ['RANK'], flush=True)\n"
      "if os.environ['DSLAUNCH_GENERATION'] != '0': sys.exit(0)\n"
      "host, port = os.environ['DSLAUNCH_HEARTBEAT_ADDR'].rsplit(':', 1)\n"
      "rank = int(os.environ['RANK'])\n"
      "token = os.environ['DSLAUNCH_HEARTBEAT_TOKEN'].encode()\n"
      "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(struct.pack('>qq', rank, 1) + token,\n"
      "                                                        (host, int(port)))\n"
      "time.sleep(60)\n",
      "command: [python3, worker.sh]\nelastic: {max_restarts: 1, hang_timeout: 1s}\n");
  INFO(err << out);
  CHECK(code == 0);
  CHECK(out.find("GEN 1 1") != std::string::npos);
  CHECK(err.find("made no step for 1 s (elastic.hang_timeout)") != std::string::npos);  // the restart's cause
  CHECK(err.find("restart 1/1: generation 1 on 1 node, world size 2") != std::string::npos);
}

TEST_CASE("elastic: a host whose workers failed max_host_failures times sits out its cooldown",
          "[integration]") {
  TempDir dir;
  auto [code, out, err] = RunJob(dir, 3, 1, std::string(kReport) +
                                 "echo HOST $DSLAUNCH_GENERATION $RANK $DSLAUNCH_HOST\n"
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && exit 3\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\n"
                                 "elastic: {max_restarts: 1, max_host_failures: 1, host_cooldown: 10m}\n");
  INFO(err << out);
  CHECK(code == 0);
  CHECK(out.find("HOST 1 1 127.0.0.3") != std::string::npos);  // 127.0.0.2 sat out
  CHECK(out.find("127.0.0.2:1 HOST 1") == std::string::npos);
  CHECK(err.find("dslaunch: 127.0.0.2 sits out: its workers failed 1 time (elastic.max_host_failures); "
                 "back in 600 s at the earliest (elastic.host_cooldown)") != std::string::npos);
  CHECK(err.find("restart 1/1: generation 1 on 2 nodes, world size 2") != std::string::npos);
}

TEST_CASE("elastic: a host in its cooldown still runs when min_nodes needs it", "[integration]") {
  TempDir dir;
  auto [code, out, err] = RunJob(dir, 2, 1, std::string(kReport) +
                                 "[ $DSLAUNCH_RESTART_COUNT = 0 ] || exit 0\n"
                                 "[ $RANK = 1 ] && exit 3\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\n"
                                 "elastic: {max_restarts: 1, min_nodes: 2, max_host_failures: 1,\n"
                                 "          host_cooldown: 10m}\n");
  INFO(err << out);
  CHECK(code == 0);
  CHECK(err.find("dslaunch: 127.0.0.2 is in its cooldown (600 s left) but elastic.min_nodes needs it") !=
        std::string::npos);
  CHECK(err.find("restart 1/1: generation 1 on 2 nodes, world size 2") != std::string::npos);
}

TEST_CASE("elastic: with the restarts used up, the last failure decides and every restart is named",
          "[integration]") {
  TempDir dir;
  auto [code, out, err] = RunJob(dir, 2, 1, std::string(kReport) + "[ $RANK = 1 ] && exit 5\nexec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 1}\n");
  INFO(err << out);
  CHECK(code == 5);
  CHECK(GenLines(out).size() == 4);  // two generations of two ranks
  CHECK(err.find("dslaunch: not restarting: all 1 restarts used (elastic.max_restarts)") !=
        std::string::npos);
  CHECK(err.find("  restart 1 after a failure at ") != std::string::npos);
  CHECK(err.find("dslaunch: exit code 5") != std::string::npos);
}

TEST_CASE("elastic: fewer nodes left than min_nodes -> no restart, the job fails", "[integration]") {
  TempDir dir;
  auto [code, out, err] = RunJob(dir, 2, 1, std::string(kReport) +
                                 "[ $RANK = 1 ] && { kill -9 $PPID; exit 0; }\n"
                                 "exec sleep 30\n",
                                 "command: [sh, worker.sh]\nelastic: {max_restarts: 3, min_nodes: 2}\n");
  INFO(err);
  CHECK(code == 1);
  CHECK(err.find("dslaunch: not restarting: 1 node left, elastic.min_nodes is 2") != std::string::npos);
  CHECK(err.find("agent lost") != std::string::npos);
}

// Elastic restart end to end: dstrain on 2 nodes checkpoints; node 1 is
// lost (its agent and its worker SIGKILLed); the job restarts on node 0 alone,
// which resumes from the newest complete checkpoint (resharded from 2 ranks
// to 1) and trains to the end.
TEST_CASE("elastic: dstrain survives a lost node and resumes from its checkpoint on the survivor",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  WriteFile(dir / "job.yaml",
            "checkpoint_dir: ckpt\n"
            "elastic: {max_restarts: 1, min_nodes: 1}\n"
            "env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}\n"
            "trainer:\n"
            "  model: {layers: [32, 64, 4], activation: relu}\n"
            "  data: {dataset: synthetic, samples: 4096, features: 32, classes: 4}\n"
            "  epochs: 1000\n"
            "  max_steps: 20000\n"
            "  seed: 3\n"
            "  eval: {every_epoch: false}\n"
            "  checkpoint: {every_steps: 200, keep: 2}\n"
            "  config:\n"
            "    train_micro_batch_size_per_gpu: 16\n"
            "    optimizer: {type: Adam, params: {lr: 0.001}}\n"
            "    zero_optimization: {stage: 1}\n"
            "    steps_per_print: 100000\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), JobEnv(dir));
  // Wait for the first complete checkpoint, then lose node 1.
  bool saved = false;
  for (int i = 0; i < 3000 && !saved; ++i) {
    saved = std::filesystem::exists(dir / "ckpt/step_00000200/manifest.json");
    if (!saved) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(saved);
  std::vector<pid_t> agents = ChildrenOf(c.pid, std::string("--node-index") + '\0' + "1" + '\0');
  REQUIRE(agents.size() == 1);
  std::vector<pid_t> lost = ChildrenOf(agents[0]);
  REQUIRE(lost.size() == 1);  // rank 1's dstrain
  lost.push_back(agents[0]);
  // The node at once: its agent stopped first, so that it cannot see its
  // worker die and report that (a worker failure: the restart would then keep
  // both nodes) before its own end.
  ::kill(agents[0], SIGSTOP);
  for (pid_t p : lost) ::kill(p, SIGKILL);
  int code = WaitExit(c.pid, seconds(120));
  std::string out = ReadFile(c.out_path), err = ReadFile(c.err_path);
  INFO(err << out);
  CHECK(code == 0);
  CHECK(err.find("generation 1 on 1 node, world size 1") != std::string::npos);
  CHECK(out.find("127.0.0.1:0 resumed from ") != std::string::npos);
  CHECK(out.find("saved by 2 ranks at ZeRO stage 1") != std::string::npos);
  CHECK(out.find("127.0.0.1:0 test accuracy: ") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "ckpt/step_00020000/manifest.json"));
  CHECK(AllGone(lost, seconds(10)));
}

}  // namespace
}  // namespace ds::testing
