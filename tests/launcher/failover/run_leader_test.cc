// A real run that leads its job in a site's etcd (coordinator: etcd:, TLS
// with client certificates): while it runs, the job's state in etcd is the
// generation it is in (read by the test between the restart and the end,
// so it was written at the transition, not at the end); the end is written
// too, and the leader key is gone once dslaunch exits (resigned, nothing
// waits for the lease). With replicas: 3 the run starts the job's own etcd
// (a member under a standby on each of 3 local hosts, TLS from the job's
// CA) and the members and their files go with the job. An etcd nobody
// serves is an error naming the endpoint.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/clock.h"
#include "launcher/coordinator/job_state.h"
#include "tests/integration/proc_harness.h"
#include "tests/launcher/failover/etcd_bed.h"
#include "tests/test_util/wait_until.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// A generation-0 rank 1 that fails once; generation 1 says so and waits for `go`.
constexpr const char* kWorker = R"(
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  [ "$RANK" = 1 ] && exit 3
  exec sleep 60
fi
echo "GEN1 $RANK"
while [ ! -f go ]; do sleep 0.05; done
)";

std::string JobFile(const EtcdBed& bed, const std::string& extra = "") {
  return fmt::format(
      "command: [sh, worker.sh]\nelastic: {{max_restarts: 1}}\ncoordinator:\n  etcd: [{}]\n  ca: {}\n  cert: {}\n"
      "  key: {}\n{}",
      bed.endpoints()[0], bed.client_tls().ca_file, bed.client_tls().cert_file, bed.client_tls().key_file, extra);
}

// Every key under /dslaunch/ ending in `leaf`.
std::vector<etcd::KeyValue> Keys(const EtcdBed& bed, const std::string& leaf) {
  auto c = bed.Client();
  auto r = c->Range(etcd::RangeRequest{"/dslaunch/", etcd::PrefixEnd("/dslaunch/")});
  REQUIRE(r.ok());
  std::vector<etcd::KeyValue> out;
  for (const auto& kv : r->kvs)
    if (kv.key.size() > leaf.size() && kv.key.compare(kv.key.size() - leaf.size(), leaf.size(), leaf) == 0)
      out.push_back(kv);
  return out;
}

JobState Stored(const EtcdBed& bed) {
  auto states = Keys(bed, "/state");
  REQUIRE(states.size() == 1);
  auto s = DecodeJobState(states[0].value, RealClock().Now(), states[0].key);
  INFO(states[0].value);
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("run leader: the job's state in a site's etcd follows its transitions, and the leader resigns at the end",
          "[etcd][run]") {
  auto bed = EtcdBed::Start(1);
  TempDir dir("dsl-run-leader");
  WriteFile(dir / "worker.sh", kWorker);
  WriteFile(dir / "job.yaml", JobFile(*bed));
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 2), "job.yaml"}, dir.path(), JobEnv(dir));
  REQUIRE(WaitForText(c.out_path, "GEN1 0", std::chrono::seconds(60)));
  // Written off the io thread, at most kStateEvery after the transition.
  REQUIRE(WaitUntil([&] { return Stored(*bed).generation == 1; }, std::chrono::seconds(10)));
  const JobState running = Stored(*bed);
  CHECK(running.generation == 1);
  CHECK(running.budget.restarts == 1);
  CHECK(running.phase == CoordState::kRunning);
  CHECK(running.world_size == 2);
  auto leader = Keys(*bed, "/leader");
  REQUIRE(leader.size() == 1);
  CHECK(leader[0].lease != 0);
  CHECK(leader[0].key == fmt::format("/dslaunch/{}/leader", running.job_id));
  WriteFile(dir / "go", "");
  const int code = WaitExit(c.pid, seconds(60));
  INFO(ReadFile(c.err_path));
  CHECK(code == 0);
  CHECK(Stored(*bed).phase == CoordState::kDone);
  CHECK(Keys(*bed, "/leader").empty());
  CHECK(ReadFile(c.err_path).find(fmt::format("coordinator: leads job {} in etcd ({}, fencing token {})",
                                              running.job_id, bed->endpoints()[0], leader[0].create_revision)) !=
        std::string::npos);
}

// The processes whose command line names `text` (the test's own directory).
std::vector<pid_t> ProcessesNaming(const std::string& text) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

std::vector<std::string> EtcdEntries(const std::string& private_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(private_dir, ec))
    if (e.path().filename().string().find(".etcd") != std::string::npos) out.push_back(e.path().filename());
  return out;
}

// The entries of the members' files in private directory `xdg`/dslaunch, of member `name` ("" = any).
size_t MemberFiles(const std::string& xdg, const std::string& name = "") {
  size_t n = 0;
  for (const std::string& e : EtcdEntries(xdg + "/dslaunch")) n += e.find("." + name) != std::string::npos;
  return n;
}

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Ended, or a zombie: its parent (the leader's local launcher) reaps it at the end.
bool Gone(pid_t pid) {
  const std::string stat = ReadFile(fmt::format("/proc/{}/stat", pid));
  return stat.empty() || stat.find(") Z ") != std::string::npos;
}

// A job on 3 local hosts with coordinator: {replicas: 3}, its private
// directory the test's own; its workers end once `go` exists.
struct ReplicaJob {
  TempDir dir{"dsl-run-replicas"};
  std::string xdg = dir / "xdg";
  Child c;
  ReplicaJob() {
    REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
    auto env = JobEnv(dir);
    env.push_back({"XDG_RUNTIME_DIR", xdg});
    WriteFile(dir / "worker.sh", "while [ ! -f go ]; do sleep 0.05; done\necho ran $RANK\n");
    WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\ncoordinator:\n  replicas: 3\n");
    c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 3, 1), "job.yaml"}, dir.path(), env);
  }
  std::string Err() const { return ReadFile(c.err_path); }
  // What each member's etcd said last, and which standbys still run: why one did not come.
  std::string Members() const {
    std::string out;
    for (const std::string& e : EtcdEntries(xdg + "/dslaunch")) {
      if (e.size() < 4 || e.compare(e.size() - 4, 4, ".log") != 0) continue;
      std::vector<std::string> lines;
      std::istringstream log(ReadFile(xdg + "/dslaunch/" + e));
      for (std::string line; std::getline(log, line);) lines.push_back(line);
      out += "\n" + e + ":";
      for (size_t i = lines.size() > 6 ? lines.size() - 6 : 0; i < lines.size(); ++i) out += "\n" + lines[i];
    }
    for (int k = 0; k < 3; ++k)
      out += fmt::format("\nstandby {}: {} process(es)", k,
                         ProcessesNaming(fmt::format("--standby-index {} --standby-cwd {}", k, dir.path())).size());
    return out;
  }
  size_t MemberFiles(const std::string& name = "") const { return ds::testing::MemberFiles(xdg, name); }
};

TEST_CASE("run leader: replicas: 3 starts the job's own etcd on 3 hosts, over TLS, and takes it away at the end",
          "[etcd][run]") {
  ReplicaJob job;
  // The workers end once every standby waits: all three members form (a standby ended while
  // its member still forms is cmd/job_replicas_test's case).
  {
    const bool all = WaitUntil([&] { return CountOf(job.Err(), "dslaunch: standby for job ") == 3; }, seconds(60));
    INFO(job.Err() << job.Members());
    CHECK(all);
  }
  WriteFile(job.dir / "go", "");
  CHECK(WaitExit(job.c.pid, seconds(120)) == 0);
  const std::string err = job.Err();
  INFO(err);
  CHECK(err.find("job.yaml:3:13: coordinator.replicas: the job's own etcd: a member and a standby coordinator on "
                 "each of the first 3 hosts") != std::string::npos);
  CHECK(std::regex_search(err, std::regex("coordinator: leads job [0-9a-f]+ in etcd \\(https://127\\.0\\.0\\.1:[0-9]+, "
                                          "https://127\\.0\\.0\\.2:[0-9]+, https://127\\.0\\.0\\.3:[0-9]+,")));
  CHECK(ReadFile(job.c.out_path).find("ran 2") != std::string::npos);
  // The standbys see the job end and go, with their members and the members' files.
  CHECK(WaitUntil([&] { return ProcessesNaming(job.xdg).empty(); }, seconds(30)));
  const bool gone = WaitUntil([&] { return job.MemberFiles() == 0; }, seconds(30));
  INFO("left: " << fmt::format("{}", fmt::join(EtcdEntries(job.xdg + "/dslaunch"), ", ")));
  CHECK(gone);
}

TEST_CASE("run leader: replicas: 3, a standby SIGTERMed while it waits takes its member and files with it; the "
          "job ends 0 on the other two members", "[etcd][run]") {
  ReplicaJob job;
  REQUIRE(WaitUntil([&] { return job.Err().find("coordinator.standbys: the agents know where the standbys wait") !=
                                 std::string::npos; },
                    seconds(60)));
  const std::vector<pid_t> standby = ProcessesNaming("--standby-index 2 --standby-cwd " + job.dir.path());
  REQUIRE(standby.size() == 1);
  CHECK(job.MemberFiles("m2") > 0);
  REQUIRE(::kill(standby[0], SIGTERM) == 0);
  const bool went = WaitUntil([&] { return Gone(standby[0]) && job.MemberFiles("m2") == 0; }, seconds(20));
  INFO("m2's files left: " << job.MemberFiles("m2") << "; its standby gone: " << Gone(standby[0]));
  CHECK(went);
  WriteFile(job.dir / "go", "");
  CHECK(WaitExit(job.c.pid, seconds(120)) == 0);
  const std::string err = job.Err();
  INFO(err);
  CHECK(err.find(": ended by a signal") != std::string::npos);
  CHECK(WaitUntil([&] { return job.MemberFiles() == 0; }, seconds(30)));
}

// Done-when (a) of issue 45 on one machine: the job's own etcd, dslaunch
// SIGKILLed mid-run. A standby (each runs a member) takes the job over with
// the same workers, and `dslaunch attach` follows it to its end.
// A job on 3 local hosts with coordinator: {replicas: 3, grace: 30s}
// whose dslaunch is SIGKILLed once its 3 workers run (each says its pid)
// and the agents know where the standbys wait; the workers end once Go().
struct TakeoverJob {
  TempDir dir{"dsl-run-replicas"};
  std::string xdg = dir / "xdg";
  std::vector<std::pair<std::string, std::string>> env = JobEnv(dir);
  Child c;
  std::vector<pid_t> workers;  // from the "host:rank pid N" lines
  std::string job_id;
  std::vector<std::string> members;  // the members' client URLs

  TakeoverJob() {
    REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
    REQUIRE(::mkfifo((dir / "go").c_str(), 0600) == 0);
    env.push_back({"XDG_RUNTIME_DIR", xdg});
    WriteFile(dir / "worker.sh", "echo pid $$\nread x < go\necho done $RANK\n");
    WriteFile(dir / "job.yaml",
              "command: [sh, worker.sh]\nelastic: {heartbeat_interval: 250ms, heartbeat_timeout: 1s}\n"
              "coordinator: {replicas: 3, grace: 30s}\n");
    c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 3, 1), "job.yaml"}, dir.path(), env);
    REQUIRE(WaitUntil([&] {
      const std::string out = ReadFile(c.out_path);
      workers.clear();
      static const std::regex pid_line(" pid ([0-9]+)\n");
      for (std::sregex_iterator m(out.begin(), out.end(), pid_line), end; m != end; ++m)
        workers.push_back(std::stoi((*m)[1]));
      return workers.size() == 3;
    }, seconds(60)));
    // The loss counts once the agents know where the standbys wait (before, only the lost address is known).
    INFO(ReadFile(c.err_path));
    REQUIRE(WaitUntil([&] {
      return std::regex_search(ReadFile(c.err_path),
                               std::regex("the agents know where the standbys wait: [0-9.:]+, [0-9.:]+, [0-9.:]+\n"));
    }, seconds(60)));
    std::smatch m;
    const std::string err = ReadFile(c.err_path);
    REQUIRE(std::regex_search(err, m, std::regex("leads job ([0-9a-f]+) in etcd \\((https://[0-9.:]+), "
                                                 "(https://[0-9.:]+), (https://[0-9.:]+),")));
    job_id = m[1];
    members = {m[2], m[3], m[4]};
  }
  // A client of the job's etcd with member 0's standby's certificate.
  std::unique_ptr<etcd::Client> Client() const {
    const std::string tls = xdg + "/dslaunch/" + job_id + ".etcd-tls.m0/";
    auto client = etcd::Client::Create({members, {tls + "ca.crt", tls + "client.crt", tls + "client.key"}, 3});
    REQUIRE(client.ok());
    return std::move(client).value();
  }
  void KillDslaunch() {
    REQUIRE(::kill(c.pid, SIGKILL) == 0);
    CHECK(WaitExit(c.pid, seconds(10)) == 128 + SIGKILL);
  }
  void Go() {
    const int fd = ::open((dir / "go").c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "\n\n\n", 3) == 3);
    ::close(fd);
  }
  // After the job: nothing of it runs, and what stays is what the SIGKILLed run could not take
  // away: its own client certificate's directory.
  void CheckAllGone() const {
    CHECK(WaitUntil([&] { return ProcessesNaming(xdg).empty(); }, seconds(30)));
    std::vector<std::string> left;
    CHECK(WaitUntil([&] { return (left = EtcdEntries(xdg + "/dslaunch")).size() == 1; }, seconds(30)));
    INFO(fmt::format("{}", fmt::join(left, " ")));
    CHECK((left.size() == 1 && left[0].find(".etcd-tls.leader") != std::string::npos));
  }
};

// Done-when (a) of issue 45 on one machine: the job's own etcd, dslaunch
// SIGKILLed mid-run. A standby (each runs a member) takes the job over with
// the same workers, and `dslaunch attach` follows it to its end.
TEST_CASE("run leader: replicas: 3, dslaunch SIGKILLed: a standby leads the same workers, attach ends 0",
          "[etcd][run]") {
  TakeoverJob job;
  job.KillDslaunch();
  Child attach = Spawn({DslaunchPath(), "attach", "--wait", "60"}, job.dir.path(), job.env);
  REQUIRE(WaitForText(attach.err_path, "over from a lost one\n", seconds(60)));
  for (pid_t w : job.workers) CHECK(::kill(w, 0) == 0);  // the same workers, never restarted
  job.Go();
  CHECK(WaitExit(attach.pid, seconds(60)) == 0);
  const std::string err = ReadFile(attach.err_path), out = ReadFile(attach.out_path);
  INFO(err + out);
  CHECK(out.find("127.0.0.3:2 done 2\n") != std::string::npos);
  CHECK(err.find("all 3 workers exited 0") != std::string::npos);
  const std::string log = ReadFile(job.c.err_path);  // the standbys write where the run did
  INFO(log);
  CHECK(log.find("took over generation 0: its 3 worker(s) on 3 node(s) ran on, none restarted") != std::string::npos);
  job.CheckAllGone();
}

// A standby that took the job over and was then deposed (frozen past its
// lease while another standby took over: what a partition does to it) leaves
// the job to the new leader, exits 6, and takes its etcd member and the
// member's files with it (they stayed). The job ends 0 on the other two.
TEST_CASE("run leader: replicas: 3, a standby that led and is deposed exits 6 with its member's files; the job "
          "ends 0", "[etcd][run]") {
  TakeoverJob job;
  auto etcd = job.Client();
  const std::string key = "/dslaunch/" + job.job_id + "/";
  std::map<std::string, int> standby_at;  // its address: the standby's index
  for (int k = 0; k < 3; ++k) {
    auto kv = etcd->Get(key + "standby/" + std::to_string(k));
    REQUIRE((kv.ok() && *kv));
    standby_at[(*kv)->value] = k;
  }
  auto leader = [&]() -> int {  // the standby that leads, -1 while none does
    auto kv = etcd->Get(key + "leader");
    return kv.ok() && *kv && standby_at.count((*kv)->value) ? standby_at[(*kv)->value] : -1;
  };
  job.KillDslaunch();
  // Frozen once it has taken the job over (its own "leads" line, after the lost run's): frozen
  // earlier, as it campaigns, a standby finds another leading when it goes on, and waits again.
  int first = -1;
  REQUIRE(WaitUntil([&] {
    return (first = leader()) >= 0 && CountOf(ReadFile(job.c.err_path), "coordinator: leads job ") == 2;
  }, seconds(30)));
  const std::vector<pid_t> pid = ProcessesNaming(fmt::format("--standby-index {} --standby-cwd {}", first, job.dir.path()));
  REQUIRE(pid.size() == 1);
  REQUIRE(::kill(pid[0], SIGSTOP) == 0);
  const bool another = WaitUntil([&] { const int now = leader(); return now >= 0 && now != first; }, seconds(30));
  ::kill(pid[0], SIGCONT);
  REQUIRE(another);
  const std::string name = fmt::format("m{}", first);
  auto files = [&] { return MemberFiles(job.xdg, name); };
  const bool went = WaitUntil([&] { return Gone(pid[0]) && files() == 0; }, seconds(30));
  INFO(ReadFile(job.c.err_path));
  INFO(name << "'s files left: " << files() << "; its standby gone: " << Gone(pid[0]));
  CHECK(went);
  CHECK(ReadFile(job.c.err_path).find("(its etcd member and the member's files went) and exits 6") !=
        std::string::npos);
  Child attach = Spawn({DslaunchPath(), "attach", "--wait", "60"}, job.dir.path(), job.env);
  REQUIRE(WaitForText(attach.err_path, "over from a lost one\n", seconds(60)));
  job.Go();
  CHECK(WaitExit(attach.pid, seconds(60)) == 0);
  INFO(ReadFile(attach.err_path));
  CHECK(ReadFile(attach.err_path).find("all 3 workers exited 0") != std::string::npos);
  job.CheckAllGone();
}

// A job on `hosts` local hosts with coordinator: {replicas: 3, grace: 30s}
// and a 1 s heartbeat timeout, its private directory the test's own; its
// workers end once the file `go` exists.
struct LossJob {
  TempDir dir{"dsl-run-replicas"};
  std::string xdg = dir / "xdg";
  Child c;
  explicit LossJob(int hosts) {
    REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
    auto env = JobEnv(dir);
    env.push_back({"XDG_RUNTIME_DIR", xdg});
    WriteFile(dir / "worker.sh", "while [ ! -f go ]; do sleep 0.05; done\necho ran $RANK\n");
    WriteFile(dir / "job.yaml", "command: [sh, worker.sh]\nelastic: {heartbeat_interval: 250ms, heartbeat_timeout: 1s}\n"
                                "coordinator: {replicas: 3, grace: 30s}\n");
    c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, hosts, 1), "job.yaml"}, dir.path(), env);
  }
};

// The three first members' standbys (and so the members) lost one after
// the other, on a job of 5 hosts: the leader replaces the first two on the
// fourth and fifth hosts, so the third loss leaves a quorum (m3 and m4 of
// 3), which dslaunch reaches only through the members it learned (it
// started with m0, m1 and m2); the job ends 0. Without the replacement the
// second loss leaves m0 alone: the leader loses its lease and is deposed
// (exit 6).
TEST_CASE("run leader: replicas: 3 on 5 hosts, lost members are replaced, and the job outlives losing all three "
          "first ones", "[etcd][run]") {
  LossJob job(5);
  TempDir& dir = job.dir;
  const std::string& xdg = job.xdg;
  Child& c = job.c;
  auto err = [&] { return ReadFile(c.err_path); };
  auto lose_standby = [&](int k) {
    const std::vector<pid_t> p = ProcessesNaming(fmt::format("--standby-index {} --standby-cwd {}", k, dir.path()));
    REQUIRE(p.size() == 1);
    REQUIRE(::kill(p[0], SIGKILL) == 0);  // its member dies with it
  };
  auto said = [&](const std::string& line) {
    const bool seen = WaitUntil([&] { return err().find(line) != std::string::npos; }, seconds(60));
    INFO(err());
    REQUIRE(seen);
  };
  REQUIRE(WaitUntil([&] { return CountOf(err(), "dslaunch: standby for job ") == 3; }, seconds(60)));
  lose_standby(1);
  said("m3 on 127.0.0.4 replaces it");
  CHECK(err().find("coordinator.replicas: member m1 (https://127.0.0.2:") != std::string::npos);
  REQUIRE(WaitUntil([&] { return CountOf(err(), "dslaunch: standby for job ") == 4; }, seconds(30)));  // m3's waits
  lose_standby(2);
  said("m4 on 127.0.0.5 replaces it");
  REQUIRE(WaitUntil([&] { return CountOf(err(), "dslaunch: standby for job ") == 5; }, seconds(30)));
  lose_standby(0);
  said("no host of the job is left to run another");  // hosts 1-3 lost theirs, 4 and 5 run one
  WriteFile(dir / "go", "");
  CHECK(WaitExit(c.pid, seconds(60)) == 0);
  const std::string out = err();
  INFO(out);
  CHECK(out.find("all 5 workers exited 0") != std::string::npos);
  CHECK(out.find("no longer the leader") == std::string::npos);
  // The living standbys went with their members' files; the SIGKILLed ones could not take theirs.
  CHECK(WaitUntil([&] { return ProcessesNaming(xdg).empty(); }, seconds(30)));
  // A member's files go just after it (ReplicaMemberRun::Abandon).
  CHECK(WaitUntil([&] { return MemberFiles(xdg, "m3") + MemberFiles(xdg, "m4") == 0; }, seconds(10)));
  CHECK(MemberFiles(xdg, "m1") > 0);
}

// The replacement by a standby that took the job over (dslaunch SIGKILLed):
// it holds the job's CA from its brief and starts the new member's standby
// itself. The lost member is another standby's; the job ends 0 under the
// standby that leads.
TEST_CASE("run leader: replicas: 3 on 4 hosts, dslaunch SIGKILLed: the standby that leads replaces a lost member",
          "[etcd][run]") {
  LossJob job(4);
  TempDir& dir = job.dir;
  const std::string& xdg = job.xdg;
  Child& c = job.c;
  auto err = [&] { return ReadFile(c.err_path); };  // the standbys write where the run did
  // The loss counts once the agents know where the standbys wait (before, only the lost address is known).
  REQUIRE(WaitUntil([&] {
    return std::regex_search(err(), std::regex("the agents know where the standbys wait: [0-9.:]+, [0-9.:]+, [0-9.:]+\n"));
  }, seconds(60)));
  REQUIRE(::kill(c.pid, SIGKILL) == 0);
  CHECK(WaitExit(c.pid, seconds(10)) == 128 + SIGKILL);
  // The standby that leads names its own member first: 127.0.0.K+1 is standby K's.
  std::smatch m;
  REQUIRE(WaitUntil([&] { return CountOf(err(), "coordinator: leads job ") == 2; }, seconds(60)));
  const std::string text = err();
  REQUIRE(std::regex_search(text.cbegin() + static_cast<std::ptrdiff_t>(text.rfind("coordinator: leads job ")),
                            text.cend(), m, std::regex("in etcd \\(https://127\\.0\\.0\\.([1-3]):")));
  const int leading = std::stoi(m[1]) - 1, lost = (leading + 1) % 3;
  const std::vector<pid_t> victim = ProcessesNaming(fmt::format("--standby-index {} --standby-cwd {}", lost, dir.path()));
  REQUIRE(victim.size() == 1);
  REQUIRE(::kill(victim[0], SIGKILL) == 0);
  {
    const bool replaced = WaitUntil([&] { return err().find("m3 on 127.0.0.4 replaces it") != std::string::npos; },
                                    seconds(60));
    INFO(err());
    REQUIRE(replaced);
  }
  CHECK(err().find(fmt::format("coordinator.replicas: member m{} (https://127.0.0.{}:", lost, lost + 1)) !=
        std::string::npos);
  WriteFile(dir / "go", "");
  const bool ended = WaitUntil([&] { return err().find("all 4 workers exited 0") != std::string::npos; }, seconds(60));
  INFO(err());
  CHECK(ended);
  CHECK(WaitUntil([&] { return ProcessesNaming(xdg).empty(); }, seconds(30)));
  CHECK(WaitUntil([&] { return MemberFiles(xdg, "m3") + MemberFiles(xdg, fmt::format("m{}", leading)) == 0; },
                  seconds(10)));
}

TEST_CASE("run leader: an etcd nobody serves is named", "[etcd][run]") {
  TempDir dir("dsl-run-leader");
  WriteFile(dir / "worker.sh", "echo ran\n");
  Child c;
  const int port = UnusedPort();
  WriteFile(dir / "job.yaml", fmt::format("command: [sh, worker.sh]\ncoordinator: {{etcd: [127.0.0.1:{}]}}\n", port));
  const int code = Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "job.yaml"}, dir.path(), &c,
                       seconds(60), JobEnv(dir));
  CHECK(code != 0);
  const std::string unreachable = ReadFile(c.err_path);
  INFO(unreachable);
  CHECK(unreachable.find("coordinator.etcd: cannot campaign for /dslaunch/") != std::string::npos);
  CHECK(unreachable.find(fmt::format("127.0.0.1:{}", port)) != std::string::npos);
  CHECK(ReadFile(c.out_path).find("ran") == std::string::npos);
}

}  // namespace
}  // namespace ds::testing
