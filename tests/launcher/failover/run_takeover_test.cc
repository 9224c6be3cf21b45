// Coordinator failover in real processes with a site's etcd (TLS, client
// certificates): dslaunch is SIGKILLed mid-training; its agents keep their
// workers (coordinator.grace); `dslaunch --resume JOB`, the same command
// line, takes the job over from its state in etcd, the same worker
// processes run on (none restarted, no second start), and the job ends 0
// under the new coordinator with their output. A standby (--standby JOB)
// waiting beside the job does the same by itself, and a SIGHUP (the
// terminal gone) does not end a job with failover. Without a takeover the
// agents kill their workers once the grace is over, and --resume of a job
// that is not there says why.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "common/clock.h"
#include "launcher/coordinator/job_state.h"
#include "tests/integration/proc_harness.h"
#include "tests/launcher/failover/etcd_bed.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// Each worker writes its pid once, then works until `go` appears.
constexpr const char* kWorker = R"(
echo $$ >> pids
echo "UP $RANK"
n=0
while [ ! -f go ]; do n=$((n+1)); sleep 0.05; done
echo "DONE $RANK after $n ticks"
)";

std::string JobFile(const EtcdBed& bed, const std::string& grace) {
  return fmt::format(
      "command: [sh, worker.sh]\nelastic: {{heartbeat_interval: 0.5, heartbeat_timeout: 2}}\ncoordinator:\n"
      "  etcd: [{}]\n  ca: {}\n  cert: {}\n  key: {}\n  grace: {}\n",
      bed.endpoints()[0], bed.client_tls().ca_file, bed.client_tls().cert_file, bed.client_tls().key_file, grace);
}

// The job's state once the leader wrote it running.
JobState RunningState(const EtcdBed& bed) {
  auto c = bed.Client();
  const auto until = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < until) {
    auto r = c->Range(etcd::RangeRequest{"/dslaunch/", etcd::PrefixEnd("/dslaunch/")});
    REQUIRE(r.ok());
    for (const auto& kv : r->kvs) {
      if (kv.key.size() < 6 || kv.key.compare(kv.key.size() - 6, 6, "/state") != 0) continue;
      auto s = DecodeJobState(kv.value, RealClock().Now(), kv.key);
      REQUIRE(s.ok());
      if (s->phase == CoordState::kRunning) return *s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls etcd: the write is the leader's
  }
  FAIL("the job's state never said running");
  return {};
}

// The test's environment, its private directory (the takeover record) in `dir` too.
std::vector<std::pair<std::string, std::string>> Env(const TempDir& dir) {
  auto env = JobEnv(dir);
  env.emplace_back("XDG_RUNTIME_DIR", dir.path());
  return env;
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0; }

void KillHard(Child& c) {
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, nullptr, 0);
}

// A job of `nodes` one-rank local nodes under its first dslaunch, its
// workers up; `extra` goes at the end of its coordinator: section.
struct Training {
  std::unique_ptr<EtcdBed> bed = EtcdBed::Start(1);
  TempDir dir{"dsl-takeover"};
  std::vector<std::string> argv;
  Child first;
  std::vector<pid_t> workers;
  Training(int nodes, const std::string& grace, const std::string& extra = "") {
    WriteFile(dir / "worker.sh", kWorker);
    WriteFile(dir / "job.yaml", JobFile(*bed, grace) + extra);
    argv = {DslaunchPath(), "--hostfile", HostfileFor(dir, nodes, 1), "job.yaml"};
    first = Spawn(argv, dir.path(), Env(dir));
    workers = WaitForPids(dir / "pids", static_cast<size_t>(nodes), seconds(60));
    REQUIRE(workers.size() == static_cast<size_t>(nodes));
  }
  // The same command line with `flag job` first.
  std::vector<std::string> With(const std::string& flag, const std::string& job) const {
    std::vector<std::string> a = argv;
    a.insert(a.begin() + 1, {flag, job});
    return a;
  }
  bool WorkersAlive() const { return Alive(workers[0]) && Alive(workers[1]); }
  size_t WorkersStarted() const { return WaitForPids(dir / "pids", 3, std::chrono::milliseconds(1)).size(); }
};

constexpr const char* kTookOver = "took over generation 0: its 2 worker(s) on 2 node(s) ran on, none restarted";

TEST_CASE("run takeover: dslaunch SIGKILLed mid-training, the workers run on and dslaunch --resume ends the job 0",
          "[etcd][run]") {
  Training t(2, "30s");
  const JobState s = RunningState(*t.bed);
  KillHard(t.first);
  // Nobody commands the workers now: they run on (the agents wait for a new leader).
  REQUIRE(WaitForText(t.first.err_path, "worker(s) run on for up to", seconds(10)));
  CHECK(t.WorkersAlive());

  Child second = Spawn(t.With("--resume", s.job_id), t.dir.path(), Env(t.dir));
  INFO(ReadFile(second.err_path));
  REQUIRE(WaitForText(second.err_path, kTookOver, seconds(30)));
  CHECK(t.WorkersAlive());
  WriteFile(t.dir / "go", "");
  const int code = WaitExit(second.pid, seconds(60));
  INFO(ReadFile(second.err_path));
  CHECK(code == 0);
  CHECK(t.WorkersStarted() == 2);  // no worker started again
  const std::string out = ReadFile(second.out_path);
  CHECK(out.find("DONE 0 after") != std::string::npos);  // the adopted workers' output reaches the new coordinator
  CHECK(out.find("DONE 1 after") != std::string::npos);
  CHECK(AllGone(t.workers, seconds(10)));
}

TEST_CASE("run takeover: a standby beside the job takes it over by itself when dslaunch is SIGKILLed; a SIGHUP "
          "ends nothing", "[etcd][run]") {
  Training t(2, "30s");
  const JobState s = RunningState(*t.bed);
  Child standby = Spawn(t.With("--standby", s.job_id), t.dir.path(), Env(t.dir));
  REQUIRE(WaitForText(standby.err_path, "standby for job " + s.job_id, seconds(10)));

  ::kill(t.first.pid, SIGHUP);
  REQUIRE(WaitForText(t.first.err_path, "SIGHUP (the terminal is gone?): the job goes on", seconds(10)));
  CHECK(::waitpid(t.first.pid, nullptr, WNOHANG) == 0);  // still leading
  CHECK(t.WorkersAlive());

  KillHard(t.first);
  INFO(ReadFile(standby.err_path));
  REQUIRE(WaitForText(standby.err_path, kTookOver, seconds(30)));
  CHECK(t.WorkersAlive());
  WriteFile(t.dir / "go", "");
  CHECK(WaitExit(standby.pid, seconds(60)) == 0);
  CHECK(t.WorkersStarted() == 2);
  CHECK(ReadFile(standby.out_path).find("DONE 1 after") != std::string::npos);

  // A standby of a job that is over has nothing to wait for.
  Child late;
  CHECK(Run(t.With("--standby", s.job_id), t.dir.path(), &late, seconds(30), Env(t.dir)) == 0);
  CHECK(ReadFile(late.err_path).find("nothing to take over") != std::string::npos);
}

TEST_CASE("run takeover: the standby the job starts (coordinator.standbys) takes it over on its own address when "
          "dslaunch is SIGKILLed", "[etcd][run]") {
  Training t(2, "30s", "  standbys: 1\n");
  INFO(ReadFile(t.first.err_path));
  REQUIRE(WaitForText(t.first.err_path, "coordinator.standbys: the agents know where the standbys wait: 127.0.0.1:",
                      seconds(30)));
  KillHard(t.first);
  // The standby started with the job (its stderr is the job's) leads it now.
  REQUIRE(WaitForText(t.first.err_path, kTookOver, seconds(30)));
  CHECK(t.WorkersAlive());
  WriteFile(t.dir / "go", "");
  REQUIRE(WaitForText(t.first.err_path, "all 2 workers exited 0", seconds(30)));
  CHECK(AllGone(t.workers, seconds(10)));
  CHECK(t.WorkersStarted() == 2);
  CHECK(ReadFile(t.first.out_path).find("DONE 1 after") != std::string::npos);
  // It ends as a leader does: the job's state says done, the leader key and the standby keys are gone.
  auto c = t.bed->Client();
  const auto until = std::chrono::steady_clock::now() + seconds(30);
  bool clean = false;
  while (!clean && std::chrono::steady_clock::now() < until) {
    auto r = c->Range(etcd::RangeRequest{"/dslaunch/", etcd::PrefixEnd("/dslaunch/")});
    REQUIRE(r.ok());
    clean = r->kvs.size() == 1 && DecodeJobState(r->kvs[0].value, RealClock().Now(), "state")->phase == CoordState::kDone;
    if (!clean) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polls etcd: the standby's last writes
  }
  CHECK(clean);
}

TEST_CASE("run takeover: without a new leader the agents kill their workers when the grace is over; --resume of a "
          "job this host did not run says so", "[etcd][run]") {
  Training t(1, "1s");
  KillHard(t.first);
  CHECK(AllGone(t.workers, seconds(20)));

  Child c;
  CHECK(Run(t.With("--resume", "0123456789ab"), t.dir.path(), &c, seconds(60), Env(t.dir)) != 0);
  const std::string err = ReadFile(c.err_path);
  INFO(err);
  CHECK(err.find("--resume 0123456789ab: ") != std::string::npos);
  CHECK(err.find("only the host and user that ran the job can take it over, and only while it runs") !=
        std::string::npos);
}

}  // namespace
}  // namespace ds::testing
