// Seeing a running job from outside (issue 29): a real job of two ranks on
// 127.0.0.1-2 whose workers wait on a FIFO the test opens when it is done
// looking. /metrics is scraped with curl and its exposition parsed; hostile
// clients (an oversized request head, a slowloris) are answered or cut off
// without stopping the scrapes; the status line is read from a real
// pseudo-terminal; off a terminal the plain progress line appears;
// `dslaunch status` runs as a second process during the job and after it,
// and another user (nobody) can neither connect to the job's socket nor
// read its record.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/unique_fd.h"
#include "tests/integration/proc_harness.h"
#include "tests/test_util/other_user.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds::testing {
namespace {

using std::chrono::seconds;

// A failed REQUIRE leaves the test early: the job it started is stopped
// (SIGTERM, SIGKILL after 30 s) and reaped, never left running.
struct StopOnExit {
  pid_t pid;
  bool reaped = false;
  int Wait() {
    reaped = true;
    return WaitExit(pid, seconds(60));
  }
  ~StopOnExit() {
    if (reaped) return;
    ::kill(pid, SIGTERM);
    WaitExit(pid, seconds(30));
  }
};

// Workers say "ready", then block until the test writes a line per rank.
std::vector<std::string> WaitingJob(const TempDir& dir, std::vector<std::string> flags) {
  REQUIRE(::mkfifo((dir / "go").c_str(), 0600) == 0);
  std::vector<std::string> argv{DslaunchPath(), "--hostfile", HostfileFor(dir, 2, 1)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "/bin/sh", "-c", "echo ready; read x < " + (dir / "go")});
  return argv;
}

void Release(const TempDir& dir) {
  const int fd = ::open((dir / "go").c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "\n\n", 2) == 2);
  ::close(fd);
}

std::string Curl(int port, const std::string& path = "/metrics", int budget_s = 20) {
  std::string cmd = "curl -sS -m " + std::to_string(budget_s) + " -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(port) + path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// The exposition's samples "name{labels}" -> value; every line must be a
// comment (# HELP / # TYPE) or a sample, or the test fails.
std::map<std::string, double> Parse(const std::string& body) {
  static const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (-?[0-9.eE+-]+|NaN|[+-]Inf)$)");
  std::map<std::string, double> out;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find('\n', at);
    const std::string line = body.substr(at, end - at);
    at = end == std::string::npos ? body.size() : end + 1;
    if (line.rfind("# HELP dslaunch_", 0) == 0 || line.rfind("# TYPE dslaunch_", 0) == 0) continue;
    std::smatch m;
    INFO(line);
    REQUIRE(std::regex_match(line, m, sample));
    out[m[1]] = std::stod(m[3]);
  }
  return out;
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  return fd;
}

// Up to `n` connections that each send half a request head and go quiet;
// non-blocking, so a connection the server never takes does not hold the
// test up (those are left out).
std::vector<UniqueFd> IdleConnections(int port, int n) {
  std::vector<UniqueFd> out;
  for (int i = 0; i < n; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS) continue;
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, 100) != 1 || ::write(fd.get(), "GET /met", 8) != 8) continue;
    out.push_back(std::move(fd));
  }
  return out;
}

// Everything the peer sends until it closes; "" and false after `limit`.
bool ReadToEof(int fd, std::string* got, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return true;
    got->append(buf, static_cast<size_t>(n));
  }
}

TEST_CASE("--metrics-port serves the job's Prometheus metrics; hostile clients are cut off", "[watch]") {
  TempDir dir("watch");
  Child c = Spawn(WaitingJob(dir, {"--metrics-port", "0"}), dir.path(), JobEnv(dir));
  StopOnExit running{c.pid};
  REQUIRE(WaitForText(c.err_path, "/metrics\n", seconds(60)));
  std::smatch m;
  const std::string err = ReadFile(c.err_path);
  REQUIRE(std::regex_search(err, m, std::regex(R"(dslaunch: metrics at http://127\.0\.0\.1:([0-9]+)/metrics)")));
  const int port = std::stoi(m[1]);
  REQUIRE(WaitForText(c.out_path, "127.0.0.1:0 ready", seconds(60)));
  REQUIRE(WaitForText(c.out_path, "127.0.0.2:1 ready", seconds(60)));

  // A slowloris holds a connection open with half a request: it does not
  // stop a scrape, and is closed after the request timeout (2 s). Nor do
  // 300 of them at once (16 are served at a time; more used to wait in the
  // backlog while each held its slot 5 s, and the scrape timed out).
  const int slow = Connect(port);
  REQUIRE(::write(slow, "GET /met", 8) == 8);
  std::vector<UniqueFd> idle = IdleConnections(port, 300);
  CHECK(idle.size() >= 64);  // at least the backlog's worth got in

  std::string body = Curl(port, "/metrics", 8);
  REQUIRE(body.size() > 4);
  CHECK(body.substr(body.size() - 4) == "\n200");
  body.resize(body.size() - 4);  // "\n200"
  const auto s = Parse(body);
  const std::string job = s.begin()->first.substr(s.begin()->first.find('{'));  // {job="..."}
  CHECK(s.at("dslaunch_world_size" + job) == 2);
  CHECK(s.at("dslaunch_ranks_running" + job) == 2);
  CHECK(s.at("dslaunch_agents_registered" + job) == 2);
  CHECK(s.at("dslaunch_generation" + job) == 0);
  CHECK(s.at("dslaunch_restarts_total" + job) == 0);
  const std::string j = job.substr(1, job.size() - 2);
  CHECK(s.at("dslaunch_node_up{" + j + ",node=\"1\",host=\"127.0.0.2\"}") == 1);
  CHECK(s.count("dslaunch_node_heartbeat_age_seconds{" + j + ",node=\"0\",host=\"127.0.0.1\"}") == 1);
  CHECK(body.find("# TYPE dslaunch_restarts_total counter\n") != std::string::npos);

  CHECK(Curl(port, "/other").find("\n404") != std::string::npos);

  // A request head past 8 KiB: 431 and closed.
  const int big = Connect(port);
  const std::string junk = "GET /metrics HTTP/1.1\r\nX: " + std::string(10000, 'a');
  REQUIRE(::write(big, junk.data(), junk.size()) == static_cast<ssize_t>(junk.size()));
  std::string answer;
  CHECK(ReadToEof(big, &answer, seconds(20)));
  CHECK(answer.rfind("HTTP/1.1 431 ", 0) == 0);
  ::close(big);

  std::string slow_got;
  CHECK(ReadToEof(slow, &slow_got, seconds(30)));  // closed by the server, nothing answered
  CHECK(slow_got.empty());
  ::close(slow);

  Release(dir);
  CHECK(running.Wait() == 0);
  CHECK(Curl(port).find("\n000") != std::string::npos);  // nothing listens after the job
}

// The status socket of the job whose dslaunch is `pid` in private directory
// `pdir` (<job>-<pid>.sock); "" when there is none.
std::string SocketOf(const std::string& pdir, pid_t pid) {
  const std::string tail = "-" + std::to_string(pid) + ".sock";
  for (const auto& e : std::filesystem::directory_iterator(pdir)) {
    const std::string n = e.path().filename();
    if (n.size() > tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0) return e.path();
  }
  return "";
}

// dslaunch status ... in `dir`, with the job's environment: (exit code, stdout).
std::pair<int, std::string> Status(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{DslaunchPath(), "status"};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c;
  auto env = JobEnv(dir);
  env.push_back({"XDG_RUNTIME_DIR", ""});  // /tmp/dslaunch-<uid>: only its own 0700 keeps others out
  const int code = Run(argv, dir.path(), &c, seconds(30), env);
  return {code, ReadFile(c.out_path)};
}

TEST_CASE("dslaunch status finds the running job from another process, and its record after it", "[watch]") {
  TempDir dir("watch");
  auto env = JobEnv(dir);
  env.push_back({"XDG_RUNTIME_DIR", ""});
  Child c = Spawn(WaitingJob(dir, {}), dir.path(), env);
  StopOnExit running{c.pid};
  REQUIRE(WaitForText(c.out_path, "127.0.0.1:0 ready", seconds(60)));
  REQUIRE(WaitForText(c.out_path, "127.0.0.2:1 ready", seconds(60)));
  const std::string sock_tail = "-" + std::to_string(c.pid) + ".sock";
  const std::string sock = SocketOf("/tmp/dslaunch-" + std::to_string(::geteuid()), c.pid);
  REQUIRE(!sock.empty());
  const std::string file = std::filesystem::path(sock).filename();
  const std::string job = file.substr(0, file.size() - sock_tail.size());

  auto [code, json] = Status(dir, {"--json", job});
  CHECK(code == 0);
  CHECK(json.find("\"job_id\":\"" + job + "\"") != std::string::npos);
  CHECK(json.find("\"world_size\":2") != std::string::npos);
  CHECK(json.find("\"exit_code\":-1") != std::string::npos);
  auto [code2, table] = Status(dir, {job});
  CHECK(code2 == 0);
  CHECK(table.find("job " + job + " (dslaunch pid " + std::to_string(c.pid) + "): running\n") == 0);
  CHECK(table.find("\n1     127.0.0.2                running  ") != std::string::npos);

  const std::string connect = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)";
  if (CanActAsNobody()) {
    REQUIRE(AsNobody({"/usr/bin/python3", "-c", "pass"}));             // nobody can run the client
    CHECK_FALSE(AsNobody({"/usr/bin/python3", "-c", connect, sock}));  // another user: EACCES at the 0700 directory
    Child owner;
    CHECK(Run({"/usr/bin/python3", "-c", connect, sock}, dir.path(), &owner) == 0);  // the same, as its owner
  } else {
    WARN("not root: another user (nobody) cannot be staged; that part skipped");
  }

  Release(dir);
  CHECK(running.Wait() == 0);
  CHECK_FALSE(std::filesystem::exists(sock));
  auto [code3, ended] = Status(dir, {job});
  CHECK(code3 == 0);
  CHECK(ended.find("job " + job + " (dslaunch pid " + std::to_string(c.pid) + "): ended, exit code 0\n") == 0);
  const std::string record = sock.substr(0, sock.size() - 5) + ".json";
  if (CanActAsNobody()) {
    REQUIRE(AsNobody({"cat", "/dev/null"}));
    CHECK_FALSE(AsNobody({"cat", record}));
  }
  std::filesystem::remove(record);
  CHECK(Status(dir, {"--json", job}).first == 1);  // gone: "status: no job <job> in ..."
}

// The job remembers why it ended: after rank 1 exits 3 (rank 0 is stopped),
// `dslaunch status JOB` shows the summary dslaunch printed at the end, and
// `status --all` the job's line with its exit code and command.
TEST_CASE("dslaunch status after the end says how the job ended, and --all lists it", "[watch]") {
  TempDir dir("ended");
  const std::string xdg = dir / "xdg";  // a private directory of this test's own
  REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
  auto env = JobEnv(dir);
  env.push_back({"XDG_RUNTIME_DIR", xdg});
  const std::string script = "[ $RANK = 1 ] && { echo boom >&2; exit 3; }; exec sleep 60";
  Child job;
  CHECK(Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 2, 1), "--", "/bin/sh", "-c", script}, dir.path(), &job,
            seconds(60), env) == 3);
  auto status = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv{DslaunchPath(), "status"};
    argv.insert(argv.end(), args.begin(), args.end());
    Child c;
    const int code = Run(argv, dir.path(), &c, seconds(30), env);
    return std::make_pair(code, ReadFile(c.out_path));
  };
  auto [code, all] = status({"--all"});
  INFO(all);
  CHECK(code == 0);
  const size_t line = all.find('\n') + 1;
  const std::string job_id = all.substr(line, all.find(' ', line) - line);
  REQUIRE(job_id.size() == 12);
  CHECK(all.find(" ended     3     ") != std::string::npos);
  CHECK(all.find("/bin/sh -c '" + script + "'\n") != std::string::npos);
  auto [code2, ended] = status({job_id});
  INFO(ended);
  CHECK(code2 == 0);
  CHECK(ended.find("how it ended:\ndslaunch: job failed; first failure at ") != std::string::npos);
  CHECK(std::regex_search(ended, std::regex("\n  host 127\\.0\\.0\\.2, rank 1, pid [0-9]+: exited with code 3\n")));
  CHECK(ended.find("    | boom\n") != std::string::npos);
  CHECK(ended.find("dslaunch: exit code 3\n") != std::string::npos);
}

// A job whose dslaunch is SIGKILLed leaves its socket and no record: the
// next `dslaunch status` removes the stale socket and says that the job
// ended unrecorded before it shows the older record (it used to keep the
// socket forever and show the older record without a word).
TEST_CASE("dslaunch status after a SIGKILLed job: its stale socket goes, and it is named before the older record",
          "[watch]") {
  TempDir dir("killed");
  const std::string xdg = dir / "xdg";
  REQUIRE(::mkdir(xdg.c_str(), 0700) == 0);
  auto env = JobEnv(dir);
  env.push_back({"XDG_RUNTIME_DIR", xdg});
  Child first;
  REQUIRE(Run({DslaunchPath(), "--hostfile", HostfileFor(dir, 1, 1), "--", "/bin/true"}, dir.path(), &first,
              seconds(60), env) == 0);
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 2, 1), "--", "/bin/sh", "-c", "echo ready; exec sleep 60"},
                  dir.path(), env);
  StopOnExit running{c.pid};
  REQUIRE(WaitForText(c.out_path, "127.0.0.2:1 ready", seconds(60)));
  const std::string sock = SocketOf(xdg + "/dslaunch", c.pid);
  REQUIRE(!sock.empty());
  REQUIRE(::kill(c.pid, SIGKILL) == 0);
  CHECK(running.Wait() == 128 + SIGKILL);
  REQUIRE(std::filesystem::exists(sock));

  Child st;
  CHECK(Run({DslaunchPath(), "status"}, dir.path(), &st, seconds(30), env) == 0);
  const std::string out = ReadFile(st.out_path);
  INFO(out);
  const std::string name = std::filesystem::path(sock).stem();
  CHECK(out.find("(job " + name + " ended without a record: its dslaunch was killed, by SIGKILL or a crash; its "
                 "stale socket " + sock + " is removed)\n") == 0);
  CHECK(out.find("(dslaunch pid " + std::to_string(first.pid) + "): ended, exit code 0\n") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(sock));
}

// dstrain on two nodes, training until stopped: once the agents' progress
// summaries arrive, the plain progress line carries steps and samples/s, and
// /metrics every rank's step, step time and samples/s.
TEST_CASE("per-rank steps reach the progress line and /metrics from a real dstrain job", "[watch]") {
  TempDir dir("watch");
  WriteFile(dir / "job.yaml",
            "env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}\n"
            "trainer:\n"
            "  model: {layers: [16, 256, 256, 4], activation: relu}\n"  // steps of well over a microsecond
            "  data: {dataset: synthetic, samples: 1024, features: 16, classes: 4}\n"
            "  max_steps: 100000000\n"
            "  eval: {every_epoch: false}\n"
            "  config:\n"
            "    train_micro_batch_size_per_gpu: 8\n"
            "    optimizer: {type: Adam, params: {lr: 0.001}}\n"
            "    steps_per_print: 100000\n");
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 2, 1), "--metrics-port", "0", "--progress-interval",
                   "0.2", "job.yaml"},
                  dir.path(), JobEnv(dir));
  StopOnExit running{c.pid};
  REQUIRE(WaitForText(c.err_path, " samples/s\n", seconds(90)));
  std::smatch m;
  const std::string err = ReadFile(c.err_path);
  INFO(err);
  REQUIRE(std::regex_search(err, m, std::regex(R"(ranks 2/2 step [0-9]+( \(slowest r[01] [0-9]+\))? [0-9.e-]+s/step [0-9]+ samples/s\n)")));
  REQUIRE(std::regex_search(err, m, std::regex(R"(metrics at http://127\.0\.0\.1:([0-9]+)/metrics)")));
  std::string body = Curl(std::stoi(m[1]));
  body.resize(body.size() - 4);
  const auto s = Parse(body);
  for (const char* family : {"dslaunch_rank_step{", "dslaunch_rank_step_seconds{", "dslaunch_rank_samples_per_second{"})
    for (const char* rank : {"rank=\"0\",node=\"0\",host=\"127.0.0.1\"}", "rank=\"1\",node=\"1\",host=\"127.0.0.2\"}"}) {
      auto it = std::find_if(s.begin(), s.end(), [&](const auto& kv) {
        return kv.first.rfind(family, 0) == 0 && kv.first.find(rank) != std::string::npos;
      });
      INFO(family << rank);
      REQUIRE(it != s.end());
      CHECK(it->second > 0);
    }
  ::kill(c.pid, SIGTERM);
  CHECK(running.Wait() == 128 + SIGTERM);
}

// dstrain on two nodes with snapshots on (a checkpoint directory per node,
// one replica each), a save every 20 steps, training until stopped: the
// saves reach the progress line, /metrics (with every node's heartbeat round
// trip) and `dslaunch status`, and the report's snapshot row.
TEST_CASE("snapshots and heartbeat round trips reach every view of a real dstrain job", "[watch]") {
  TempDir dir("watch");
  WriteFile(dir / "job.yaml",
            "checkpoint: {dir: \"ckpt-{host}\"}\n"
            "env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}\n"
            "trainer:\n"
            "  model: {layers: [16, 64, 4], activation: relu}\n"
            "  data: {dataset: synthetic, samples: 1024, features: 16, classes: 4}\n"
            "  max_steps: 100000000\n"
            "  eval: {every_epoch: false}\n"
            "  checkpoint: {every_steps: 20, keep: 2}\n"
            "  config:\n"
            "    train_micro_batch_size_per_gpu: 8\n"
            "    optimizer: {type: Adam, params: {lr: 0.001}}\n"
            "    steps_per_print: 100000\n");
  auto env = JobEnv(dir);
  env.push_back({"XDG_RUNTIME_DIR", (dir / "xdg").c_str()});
  std::filesystem::create_directory(dir / "xdg");
  std::filesystem::permissions(dir / "xdg", std::filesystem::perms::owner_all);
  Child c = Spawn({DslaunchPath(), "--hostfile", HostfileFor(dir, 2, 1), "--metrics-port", "0", "--progress-interval",
                   "0.2", "job.yaml"},
                  dir.path(), env);
  StopOnExit running{c.pid};
  REQUIRE(WaitForText(c.err_path, " (newest step ", seconds(90)));  // a save reached an agent
  const std::string err = ReadFile(c.err_path);
  INFO(err);
  std::smatch m;
  REQUIRE(std::regex_search(err, m, std::regex(R"(metrics at http://127\.0\.0\.1:([0-9]+)/metrics)")));
  const int port = std::stoi(m[1]);
  // Scraped until every node has reported a save and answered a Ping (each
  // comes with its agent's next frame), for at most 60 s.
  std::map<std::string, double> s;
  auto sample = [&](const std::string& family, const std::string& labels) {
    auto it = std::find_if(s.begin(), s.end(), [&](const auto& kv) {
      return kv.first.rfind(family + "{", 0) == 0 && kv.first.find(labels) != std::string::npos;
    });
    return it == s.end() ? -1.0 : it->second;
  };
  const char* nodes[] = {"node=\"0\",host=\"127.0.0.1\"}", "node=\"1\",host=\"127.0.0.2\"}"};
  auto complete = [&] {
    for (const char* node : nodes)
      if (sample("dslaunch_heartbeat_rtt_seconds", node) < 0 || sample("dslaunch_snapshot_held_step", node) < 20 ||
          sample("dslaunch_snapshot_bytes_total", node) <= 0)
        return false;
    return sample("dslaunch_snapshot_saves_total", "job=") >= 1 &&
           sample("dslaunch_rank_save_stall_seconds", "rank=\"0\"") >= 0 &&
           sample("dslaunch_rank_save_stall_seconds", "rank=\"1\"") >= 0;
  };
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  for (bool first = true; first || (!complete() && std::chrono::steady_clock::now() < deadline); first = false) {
    if (!first) ::poll(nullptr, 0, 200);  // paces the scrapes; the condition is what is waited for
    std::string body = Curl(port);
    REQUIRE(body.size() > 4);
    body.resize(body.size() - 4);
    s = Parse(body);
  }
  for (const char* node : nodes) {
    INFO(node);
    CHECK(sample("dslaunch_heartbeat_rtt_seconds", node) >= 0);
    CHECK(sample("dslaunch_snapshot_held_step", node) >= 20);
    CHECK(sample("dslaunch_snapshot_bytes_total", node) > 0);
  }
  CHECK(sample("dslaunch_snapshot_saves_total", "job=") >= 1);
  CHECK(sample("dslaunch_snapshot_newest_step", "job=") >= 20);
  CHECK(sample("dslaunch_rank_save_stall_seconds", "rank=\"0\"") >= 0);  // each rank's worker said its stall
  CHECK(sample("dslaunch_rank_save_stall_seconds", "rank=\"1\"") >= 0);

  std::vector<std::string> status{DslaunchPath(), "status", "--json"};
  Child st;
  REQUIRE(Run(status, dir.path(), &st, seconds(30), env) == 0);
  const std::string json = ReadFile(st.out_path);
  INFO(json);
  CHECK(json.find("\"snapshots\":true") != std::string::npos);
  CHECK(std::regex_search(json, std::regex(R"("rtt_seconds":[0-9])")));
  CHECK(std::regex_search(json, std::regex(R"("snapshot":\{"bytes_held":[1-9])")));
  Child table;
  REQUIRE(Run({DslaunchPath(), "status"}, dir.path(), &table, seconds(30), env) == 0);
  CHECK(std::regex_search(ReadFile(table.out_path),
                          std::regex(R"(\n0     127\.0\.0\.1 +running  [0-9.]+s ago +[0-9.]+ms +step [0-9]+ memory )")));

  ::kill(c.pid, SIGTERM);
  CHECK(running.Wait() == 128 + SIGTERM);
  Child report;
  REQUIRE(Run({DslaunchPath(), "report", "-o", dir / "page.html"}, dir.path(), &report, seconds(30), env) == 0);
  const std::string page = ReadFile(dir / "page.html");
  CHECK(page.find(">snapshots</text>") != std::string::npos);
  // A job this short may end before the timeline's first sample after its
  // saves (every 2 s): then its one point is the last view's, whose agents
  // have left and whose step may be unknown.
  CHECK(std::regex_search(page, std::regex(R"(<g class="snapshot"><title>snapshot( of step [0-9]+)? at [0-9.]+ s</title>)")));
}

// Forks with a 200x50 pty as the child's terminal (`master`, the other
// side); the child enters the job's directory and environment and runs
// `exec`, which replaces it (exit 127 if it returns). The child's pid.
pid_t ForkOnPty(const TempDir& dir, int& master, const std::function<void()>& exec) {
  winsize ws{};
  ws.ws_col = 200;
  ws.ws_row = 50;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid == 0) {
    if (::chdir(dir.path().c_str()) != 0) ::_exit(126);
    for (const auto& [k, v] : JobEnv(dir)) ::setenv(k.c_str(), v.c_str(), 1);
    exec();
    ::_exit(127);
  }
  return pid;
}

TEST_CASE("off a terminal a plain progress line appears every --progress-interval", "[watch]") {
  TempDir dir("watch");
  Child c = Spawn(WaitingJob(dir, {"--progress-interval", "0.2"}), dir.path(), JobEnv(dir));
  StopOnExit running{c.pid};
  CHECK(WaitForText(c.err_path, " gen 0 (restarts left 0) ranks 2/2\n", seconds(60)));
  Release(dir);
  CHECK(running.Wait() == 0);
  CHECK(ReadFile(c.err_path).find("\033[") == std::string::npos);  // no terminal codes in a log
}

TEST_CASE("on a terminal the status line stays at the bottom, below workers' lines", "[watch]") {
  TempDir dir("watch");
  const std::vector<std::string> args = WaitingJob(dir, {});
  int master = -1;
  const pid_t pid = ForkOnPty(dir, master, [&] {
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
  });
  REQUIRE(pid >= 0);
  std::string shown;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  auto read_until = [&](const std::string& text) {
    char buf[4096];
    while (shown.find(text) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, 1000) <= 0) continue;
      const ssize_t n = ::read(master, buf, sizeof(buf));
      if (n <= 0) return false;
      shown.append(buf, static_cast<size_t>(n));
    }
    return shown.find(text) != std::string::npos;
  };
  StopOnExit running{pid};
  UniqueFd master_fd(master);
  REQUIRE(read_until("127.0.0.1:0 ready\r\n"));
  REQUIRE(read_until("127.0.0.2:1 ready\r\n"));
  CHECK(read_until(" ranks 2/2"));
  Release(dir);
  read_until("\x04never");  // to the end (EIO once dslaunch and its children are gone)
  CHECK(running.Wait() == 0);
  INFO(shown);
  // The status line is drawn in place, each worker line erases it first and
  // it comes back after the line; nothing is ever written after it on its row.
  CHECK(shown.find("\r\033[Kdslaunch ") != std::string::npos);
  for (const char* line : {"127.0.0.1:0 ready", "127.0.0.2:1 ready"}) {
    const size_t at = shown.find(line);
    REQUIRE(at != std::string::npos);
    // At a line's start: the status line cleared first, or none up (the other node's line ended
    // just before: two dslaunch share this terminal). Mid-line is the regex below.
    const std::string before = shown.substr(at - 4, 4);
    INFO("before the notice: " << before);
    CHECK((before == "\r\033[K" || before.back() == '\n'));
  }
  CHECK_FALSE(std::regex_search(shown, std::regex(R"(ranks [0-9]+/2[^\r\n\x1b]*ready)")));
}

// A per-node rendezvous with both nodes in one terminal, as a newcomer tries
// it on one machine: node 1 in the background, node 0 in front with its
// status line. Every notice of either, node 0's own (the loopback secret's)
// and node 1's (waiting, joining), starts on a cleared row and the status
// line comes back after it; no status text is ever continued by a notice.
TEST_CASE("a notice during a per-node rendezvous clears the status line's row and the line comes back",
          "[watch]") {
  TempDir dir("pernode-tty");
  std::filesystem::create_directory(dir / "xdg");
  ::chmod((dir / "xdg").c_str(), 0700);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  ::close(fd);
  const std::string node = DslaunchPath() + " --nnodes 2 --nproc_per_node 1 --master_addr 127.0.0.1 --master_port " +
                           std::to_string(ntohs(sa.sin_port)) + " --node_rank ";
  const std::string both = node + "1 -- true & " + node + "0 -- true; rc=$?; wait; exit $rc";
  int master = -1;
  const pid_t pid = ForkOnPty(dir, master, [&] {
    ::setenv("XDG_RUNTIME_DIR", (dir / "xdg").c_str(), 1);
    ::execl("/bin/sh", "sh", "-c", both.c_str(), static_cast<char*>(nullptr));
  });
  REQUIRE(pid >= 0);
  StopOnExit running{pid};
  UniqueFd master_fd(master);
  std::string shown;
  char buf[4096];
  for (const auto deadline = std::chrono::steady_clock::now() + seconds(60); std::chrono::steady_clock::now() < deadline;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    const ssize_t n = ::read(master, buf, sizeof(buf));
    if (n <= 0) break;  // EIO once both dslaunch and their children are gone
    shown.append(buf, static_cast<size_t>(n));
  }
  CHECK(running.Wait() == 0);
  INFO(shown);
  for (const char* notice : {"dslaunch: no DSLAUNCH_SECRET_FILE: the other nodes", "dslaunch: node 1 of 2 (--node_rank): joining node 0"}) {
    const size_t at = shown.find(notice);
    REQUIRE(at != std::string::npos);
    CHECK(shown.substr(at - 4, 4) == "\r\033[K");
  }
  CHECK(shown.find("\r\033[Kdslaunch 0s gen 0") != std::string::npos);  // the status line was up meanwhile
  CHECK(shown.find("all 2 workers exited 0") != std::string::npos);
  CHECK_FALSE(std::regex_search(shown, std::regex(R"(ranks [0-9]+/2[^\r\n\x1b]*dslaunch:)")));
}

}  // namespace
}  // namespace ds::testing
