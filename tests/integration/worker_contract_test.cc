// The agent's side of the worker contract (issue 11) with real dslaunch runs
// on this machine: --local_rank=N in argv, core binding (one core per rank
// on a 2-core node), TORCHELASTIC_ERROR_FILE read into the summary, and
// error files the agent must not trust.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "common/cpu_binding.h"
#include "common/strings.h"
#include "proc_harness.h"
#include "tests/test_util/skip.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// "<label> <rank> <rest>" lines of dslaunch's stdout ("host:rank| " prefix stripped), by rank.
std::map<int, std::string> Tagged(const std::string& out, const std::string& label) {
  std::map<int, std::string> by_rank;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find(" " + label + " ");
    if (at == std::string::npos) continue;
    std::string rest = line.substr(at + label.size() + 2);
    size_t sp = rest.find(' ');
    auto rank = ParseInt(rest.substr(0, sp));
    if (rank) by_rank[static_cast<int>(*rank)] = sp == std::string::npos ? "" : rest.substr(sp + 1);
  }
  return by_rank;
}

std::vector<std::pair<std::string, std::string>> EnvWithTmp(const TempDir& dir) {
  auto env = JobEnv(dir);
  env.emplace_back("TMPDIR", dir.path());
  return env;
}

// The agents' private error-file directories left under `dir`.
int LeftoverErrorDirs(const TempDir& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().filename().string().rfind("dsagent-errors.", 0) == 0) ++n;
  return n;
}

TEST_CASE("worker contract: --local_rank=N is appended only with local_rank_arg", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  WriteFile(dir / "worker.sh", "echo \"ARGV $RANK $*\"\n");
  for (bool on : {true, false}) {
    WriteFile(dir / "job.yaml", std::string("command: [sh, worker.sh, --foo, 'a b']\nlocal_rank_arg: ") +
                                    (on ? "true" : "false") + "\n");
    Child c;
    int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
    std::string out = ReadFile(c.out_path);
    INFO(out << ReadFile(c.err_path));
    REQUIRE(code == 0);
    auto argv = Tagged(out, "ARGV");
    REQUIRE(argv.size() == 2);
    for (int r = 0; r < 2; ++r)
      CHECK(argv[r] == (on ? "--foo a b --local_rank=" + std::to_string(r) : std::string("--foo a b")));
  }
}

TEST_CASE("worker contract: bind_cores_to_rank gives each local rank its own slice and OMP_NUM_THREADS",
          "[integration]") {
  std::vector<int> cores = NumaOrder(AllowedCpus(), NumaNodeCpus());
  if (cores.size() < 2) DS_SKIP("needs at least 2 CPUs");
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  WriteFile(dir / "worker.sh",
            "echo \"CPUS $RANK $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)\"\n"
            "echo \"OMP $RANK $OMP_NUM_THREADS\"\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\nbind_cores_to_rank: true\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
  std::string out = ReadFile(c.out_path);
  INFO(out << ReadFile(c.err_path));
  REQUIRE(code == 0);
  auto cpus = Tagged(out, "CPUS");
  auto omp = Tagged(out, "OMP");
  REQUIRE(cpus.size() == 2);
  const size_t per = cores.size() / 2;
  for (int r = 0; r < 2; ++r) {
    std::vector<int> mine(cores.begin() + static_cast<ptrdiff_t>(r * per),
                          cores.begin() + static_cast<ptrdiff_t>((r + 1) * per));
    CHECK(cpus[r] == FormatCpuList(mine));
    CHECK(omp[r] == std::to_string(per));
  }
  if (cores.size() == 2) CHECK((cpus[0] == "0" && cpus[1] == "1"));  // this 2-core machine: one core each
}

TEST_CASE("worker contract: a core list naming CPUs the node lacks fails each worker, naming host and CPUs",
          "[integration]") {
  std::vector<int> allowed = AllowedCpus();
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  WriteFile(dir / "job.yaml", "command: [sh, -c, 'echo WORKER-RAN']\nbind_cores_to_rank: true\nbind_core_list: 0-4095\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
  std::string all = ReadFile(c.out_path) + ReadFile(c.err_path);
  INFO(all);
  CHECK(code == 127);
  CHECK(all.find("WORKER-RAN") == std::string::npos);
  std::vector<int> missing;
  for (int cpu = 0; cpu <= 4095; ++cpu)
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) missing.push_back(cpu);
  CHECK(all.find("dsagent: host 127.0.0.1: bind_core_list '0-4095': CPUs " + FormatCpuList(missing) +
                 " do not exist or are not allowed here (allowed: " + FormatCpuList(allowed) + ")") !=
        std::string::npos);
}

TEST_CASE("worker contract: a bad bind_core_list fails at plan time, naming the value and the form",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 1);
  WriteFile(dir / "job.yaml", "command: [sh, -c, 'echo WORKER-RAN']\nbind_cores_to_rank: true\nbind_core_list: 3-1\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), JobEnv(dir));
  std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(code != 0);
  CHECK(err.find("bind_core_list '3-1': '3-1': a range must not end below its start; expected a list like "
                 "0-3,8-11") != std::string::npos);
  CHECK(ReadFile(c.out_path).find("WORKER-RAN") == std::string::npos);
}

const char kTorchRecord[] = R"({"message": {"message": "ValueError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"/work/train.py\", line 40, in <module>\n    main()\n  File \"/work/train.py\", line 31, in main\n    step(model)\n  File \"/work/model.py\", line 7, in forward\n    return self.w @ x\n  File \"/work/train.py\", line 12, in step\n    raise ValueError(\"boom\")\nValueError: boom\n", "timestamp": "1714000000"}}})";

TEST_CASE("worker contract: the failing rank's TORCHELASTIC_ERROR_FILE reaches the summary", "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 1, 2);
  WriteFile(dir / "record.json", kTorchRecord);
  REQUIRE(::mkfifo((dir / "gate").c_str(), 0600) == 0);
  // Rank 1 fails only after rank 0 has printed (an event, the FIFO: the
  // failure would otherwise stop rank 0 before it speaks).
  WriteFile(dir / "worker.sh",
            "echo \"EF $RANK $(stat -c %a \"$(dirname \"$TORCHELASTIC_ERROR_FILE\")\") $TORCHELASTIC_ERROR_FILE\"\n"
            "if [ \"$RANK\" = 0 ]; then echo go > gate; exit 0; fi\n"
            "read x < gate\n"
            "cat record.json > \"$TORCHELASTIC_ERROR_FILE\"\n"
            "echo 'ValueError: boom' >&2\n"
            "exit 1\n");
  WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\n");
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), EnvWithTmp(dir));
  std::string out = ReadFile(c.out_path), err = ReadFile(c.err_path);
  INFO(out << err);
  CHECK(code == 1);
  auto ef = Tagged(out, "EF");
  REQUIRE(ef.size() == 2);
  CHECK(ef[0].rfind("700 " + dir.path() + "/dsagent-errors.", 0) == 0);  // private, under $TMPDIR
  CHECK(ef[0] != ef[1]);                                                    // one file per rank
  CHECK(err.find("  rank 1 error: ValueError: boom\n"
                 "  innermost 3 frames of its traceback:\n"
                 "    File \"/work/train.py\", line 31, in main\n"
                 "      step(model)\n"
                 "    File \"/work/model.py\", line 7, in forward\n"
                 "      return self.w @ x\n"
                 "    File \"/work/train.py\", line 12, in step\n"
                 "      raise ValueError(\"boom\")\n") != std::string::npos);
  CHECK(err.find("dslaunch: exit code 1\n") != std::string::npos);
  CHECK(LeftoverErrorDirs(dir) == 0);  // the agent removed its directory on the way out
}

TEST_CASE("worker contract: an inherited, symlinked or non-JSON error file is not trusted", "[integration]") {
  const std::map<std::string, std::string> cases = {
      {"inherited", ""},  // writes nothing: the inherited path is not the agent's
      {"symlink", "ln -sf \"$PWD/target.json\" \"$TORCHELASTIC_ERROR_FILE\"\n"},
      {"not json", "echo 'Traceback: not json' > \"$TORCHELASTIC_ERROR_FILE\"\n"},
  };
  for (const auto& [name, action] : cases) {
    TempDir dir;
    std::string hostfile = HostfileFor(dir, 1, 1);
    WriteFile(dir / "foreign.json", R"({"message": "Foreign: must not show"})");
    WriteFile(dir / "target.json", R"({"message": "Linked: must not show"})");
    WriteFile(dir / "worker.sh", action + "echo \"EF $RANK $TORCHELASTIC_ERROR_FILE\"\nexit 1\n");
    WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\n");
    auto env = EnvWithTmp(dir);
    env.emplace_back("TORCHELASTIC_ERROR_FILE", dir / "foreign.json");
    Child c;
    int code = Run({DslaunchPath(), "--hostfile", hostfile, "job.yaml"}, dir.path(), &c, seconds(60), env);
    std::string out = ReadFile(c.out_path), err = ReadFile(c.err_path);
    INFO(name << "\n" << out << err);
    CHECK(code == 1);
    auto ef = Tagged(out, "EF");
    REQUIRE(ef.size() == 1);
    CHECK(ef[0].rfind(dir.path() + "/dsagent-errors.", 0) == 0);  // the agent's value wins
    CHECK(err.find("must not show") == std::string::npos);
    CHECK(err.find(" error: ") == std::string::npos);
    CHECK(err.find("dslaunch: exit code 1\n") != std::string::npos);
    CHECK(LeftoverErrorDirs(dir) == 0);
  }
}

TEST_CASE("worker contract: after a stop (SIGTERM to dslaunch) the agents' error-file directories are gone",
          "[integration]") {
  TempDir dir;
  std::string hostfile = HostfileFor(dir, 2, 1);
  std::string pids = dir / "pids";
  // Each worker records its agent (parent) and itself, then runs until stopped.
  Child c = Spawn({DslaunchPath(), "--hostfile", hostfile, "--", "/bin/sh", "-c",
                   "echo $PPID $$ >> " + pids + "; exec sleep 60"},
                  dir.path(), EnvWithTmp(dir));
  auto ids = WaitForPids(pids, 4, seconds(30));
  REQUIRE(ids.size() == 4);
  CHECK(LeftoverErrorDirs(dir) == 2);  // one per agent, while the job runs
  REQUIRE(::kill(c.pid, SIGTERM) == 0);
  CHECK(WaitExit(c.pid, seconds(30)) == 143);
  CHECK(AllGone(ids, seconds(15)));  // agents included: they remove their directories before exiting
  CHECK(LeftoverErrorDirs(dir) == 0);
}

}  // namespace
}  // namespace ds::testing
