// The coordinator under hostile input: garbage, bad magic, a frame announcing
// 4 GiB, unauthenticated and wrong-secret clients, a half-open connection
// that never sends, a hundred 16 MiB Hello headers, more pending connections
// than the limit, a job id full of terminal escapes, a flood of refusals, and
// a listener out of file descriptors. Each is dropped (or waited out) and the
// store keeps serving others.
#include "launcher/coordinator/coordinator.h"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <future>
#include <thread>

#include "launcher/config/hostfile.h"
#include "launcher/config/selection.h"
#include "wire/client_conn.h"
#include "wire/hmac_auth.h"
#include "wire/store_client.h"

namespace ds {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

CoordinatorOptions TestOptions(double handshake_timeout = 5.0) {
  CoordinatorOptions o;
  o.job_id = "jobX";
  o.secret = "topsecret";
  o.argv = {"/bin/true"};
  o.handshake_timeout = handshake_timeout;
  return o;
}

// One node, one slot: enough for a real agent to register.
LaunchPlan OneNodePlan() {
  Hostfile hf = ParseHostfile("127.0.0.1 slots=1\n", "hostfile").value();
  return MakePlan(SelectHosts(hf, SelectionOptions{}).value(), JobSpec{}, /*use_gpus=*/false).value();
}

struct Server {
  explicit Server(double handshake_timeout = 5.0) : Server(TestOptions(handshake_timeout)) {}
  explicit Server(CoordinatorOptions o, bool start = false) { Init(o, start); }
  Server(CoordinatorOptions o, LaunchPlan p) : plan(std::move(p)) { Init(o, false); }
  void Init(const CoordinatorOptions& o, bool start) {
    coord = std::make_unique<Coordinator>(io, plan, o, record);
    REQUIRE(coord->Listen().ok());
    token = coord->EnrollAgent(0);  // before the io thread runs: no race
    if (start) coord->Start(fleet);
    thread = std::thread([this] { io.run(); });
  }
  ~Server() {
    io.stop();
    thread.join();
  }
  // A store client still works end to end.
  void CheckStillServing() {
    auto c = StoreClient::Connect(coord->address(), StoreToken("topsecret", "jobX", 0), milliseconds(5000));
    REQUIRE(c.ok());
    REQUIRE((*c)->Set("alive", {1}).ok());
    CHECK((*c)->Get("alive", milliseconds(100)).ok());
  }
  UniqueFd Raw() {
    auto fd = ConnectTcp(coord->address(), "", Clock::now() + milliseconds(5000));
    REQUIRE(fd.ok());
    return std::move(fd).value();
  }
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard = asio::make_work_guard(io);
  LaunchPlan plan = OneNodePlan();
  JobRecord record;
  NoFleetEvents fleet;
  std::unique_ptr<Coordinator> coord;
  std::string token;  // node 0's agent token
  std::thread thread;
};

// True when the server closes the connection (EOF or reset), within 10 s.
bool ClosedByServer(int fd) {
  auto deadline = Clock::now() + milliseconds(10000);
  while (true) {
    auto f = ReadFrame(fd, deadline);
    if (f.ok()) continue;  // e.g. the Error frame before the close
    return f.status().code() != Status::Code::kTimeout;
  }
}

void SendRaw(int fd, const Bytes& b) { REQUIRE(::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == (ssize_t)b.size()); }

// This process's resident set, from /proc/self/statm.
long RssBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// A process's user + system CPU time, from /proc/<pid>/stat.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  for (int i = 3; i <= 13; ++i) rest >> field;  // state .. cmajflt
  long utime = 0, stime = 0;
  rest >> utime >> stime;
  return static_cast<double>(utime + stime) / ::sysconf(_SC_CLK_TCK);
}

// Redirects this process's stderr (where DS_LOG writes) to a file while alive.
class StderrCapture {
 public:
  StderrCapture() : path_("/tmp/coordinator_test_stderr." + std::to_string(::getpid())) {
    ::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrCapture() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::unlink(path_.c_str());
  }
  std::string Text() const {
    std::ifstream in(path_);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Waits (up to 5 s) until the captured text contains `needle`.
  bool WaitFor(const std::string& needle) const {
    auto deadline = Clock::now() + milliseconds(5000);
    while (Text().find(needle) == std::string::npos) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

 private:
  std::string path_;
  int saved_ = -1;
};

size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

msg::Hello AgentHello(const std::string& job_id) {
  msg::Hello h;
  h.role = wire::Role::kAgent;
  h.name = "127.0.0.1";
  h.job_id = job_id;
  return h;
}

TEST_CASE("coordinator: garbage bytes close only that connection", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  SendRaw(fd.get(), Bytes(junk.begin(), junk.end()));
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: a frame announcing 4 GiB is refused unread", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  Bytes header = EncodeFrame(wire::MsgType::kHello, {});
  header[8] = header[9] = header[10] = header[11] = 0xff;
  SendRaw(fd.get(), header);
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: store requests before the handshake are refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  SendRaw(fd.get(), EncodeFrame(wire::MsgType::kStoreSet, msg::StoreSet{"k", {1}}.Encode()));
  auto f = ReadFrame(fd.get(), Clock::now() + milliseconds(5000));
  REQUIRE(f.ok());
  CHECK(f->type == wire::MsgType::kError);
  CHECK(msg::Error::Decode(f->payload)->message == "expected Hello first");
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: an agent with the wrong secret is refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  msg::Hello h;
  h.role = wire::Role::kAgent;
  h.job_id = "jobX";
  Status st = ClientHandshake(fd.get(), h, "not-the-secret", Clock::now() + milliseconds(5000));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "authentication failed (wrong secret or token)");
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: an agent authenticates with its node's one-time token, not the job secret",
          "[coordinator]") {
  Server s(TestOptions(), /*start=*/true);
  {  // the job secret opens nothing: it never leaves dslaunch
    UniqueFd fd = s.Raw();
    Status st = ClientHandshake(fd.get(), AgentHello("jobX"), "topsecret", Clock::now() + milliseconds(5000));
    CHECK(st.message() == "authentication failed (wrong secret or token)");
  }
  UniqueFd agent = s.Raw();
  REQUIRE(ClientHandshake(agent.get(), AgentHello("jobX"), s.token, Clock::now() + milliseconds(5000)).ok());
  msg::Register reg;
  reg.host = "127.0.0.1";
  REQUIRE(WriteFrame(agent.get(), wire::MsgType::kRegister, reg.Encode(), Clock::now() + milliseconds(5000)).ok());
  REQUIRE(ReadFrame(agent.get(), Clock::now() + milliseconds(5000)).ok());  // Reserve: registered
  // Spent: read from a process environment later, the token registers
  // nothing; while node 0's agent is there, the refusal says so.
  UniqueFd replay = s.Raw();
  Status st = ClientHandshake(replay.get(), AgentHello("jobX"), s.token, Clock::now() + milliseconds(5000));
  CHECK(st.code() == Status::Code::kInvalidArgument);
  CHECK(st.message() == "node 0 already joined this job (is its node rank given to two nodes?)");
}

TEST_CASE("coordinator: an agent of another job is refused", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  msg::Hello h;
  h.role = wire::Role::kAgent;
  h.job_id = "other";
  Status st = ClientHandshake(fd.get(), h, "topsecret", Clock::now() + milliseconds(5000));
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "unknown job id 'other'");
}

// The per-node form's join (wire_format.md "Join"): the rank a node is given.
Result<msg::Joined> Join(Server& s, const std::string& key, const std::string& job_id = "jobX") {
  UniqueFd fd = s.Raw();
  const auto deadline = Clock::now() + milliseconds(5000);
  DS_RETURN_IF_ERROR(ClientHandshake(fd.get(), msg::Hello{wire::Role::kJoin, "joiner", job_id, 0}, key, deadline));
  auto f = ReadFrame(fd.get(), deadline);
  DS_RETURN_IF_ERROR(ExpectFrame(f, wire::MsgType::kJoined, "join"));
  return msg::Joined::Decode(f->payload);
}

TEST_CASE("coordinator: a node proving the join key gets the next rank; a wrong key or job gets none",
          "[coordinator]") {
  CoordinatorOptions o = TestOptions();
  o.join_key = "the-join-key";
  Hostfile hf = ParseHostfile("127.0.0.1 slots=1\n127.0.0.2 slots=1\n127.0.0.3 slots=1\n", "hostfile").value();
  Server s(o, MakePlan(SelectHosts(hf, SelectionOptions{}).value(), JobSpec{}, /*use_gpus=*/false).value());
  CHECK(Join(s, "topsecret").status().message() == "authentication failed (wrong secret or token)");
  CHECK(Join(s, "the-join-key", "other").status().message() == "unknown job id 'other'");
  auto first = Join(s, "the-join-key");
  REQUIRE(first.ok());
  CHECK(first->node_index == 1);
  CHECK(first->max_nodes == 3);
  CHECK(Join(s, "the-join-key")->node_index == 2);
  // Both ranks promised, neither agent registered yet: the joiner may ask again.
  auto promised = Join(s, "the-join-key");
  CHECK(promised.status().code() == Status::Code::kUnavailable);
  CHECK(promised.status().message() == "every rank left is promised to a node that is joining; asking again");
  s.CheckStillServing();
}

TEST_CASE("coordinator: a job with fixed ranks refuses a join", "[coordinator]") {
  Server s;
  auto j = Join(s, "topsecret");
  CHECK(j.status().code() == Status::Code::kInvalidArgument);
  CHECK(j.status().message() == "this job gives no node ranks at join: its nodes have fixed ranks (--node_rank)");
}

TEST_CASE("coordinator: a truncated frame is dropped", "[coordinator]") {
  Server s;
  UniqueFd fd = s.Raw();
  Bytes f = EncodeFrame(wire::MsgType::kHello, msg::Hello{}.Encode());
  f.resize(f.size() - 3);
  SendRaw(fd.get(), f);
  ::shutdown(fd.get(), SHUT_WR);
  CHECK(ClosedByServer(fd.get()));
  s.CheckStillServing();
}

TEST_CASE("coordinator: a half-open connection that never sends is dropped after the handshake timeout",
          "[coordinator]") {
  Server s(/*handshake_timeout=*/0.2);
  UniqueFd idle = s.Raw();
  s.CheckStillServing();  // served while the idle one is pending
  CHECK(ClosedByServer(idle.get()));
}


TEST_CASE("coordinator: 100 connections announcing a 16 MiB Hello allocate nothing; an agent registers meanwhile",
          "[coordinator]") {
  Server s(TestOptions(), /*start=*/true);
  const long before = RssBytes();
  std::vector<UniqueFd> hostile;
  for (int i = 0; i < 100; ++i) {
    hostile.push_back(s.Raw());
    Bytes header = EncodeFrame(wire::MsgType::kHello, {});
    header[8] = 0x01, header[9] = header[10] = header[11] = 0x00;  // 16 MiB, the largest legal frame
    SendRaw(hostile.back().get(), header);
  }
  // A legitimate agent: handshake, Register, and node 0 is asked to reserve MASTER_PORT.
  UniqueFd agent = s.Raw();
  REQUIRE(ClientHandshake(agent.get(), AgentHello("jobX"), s.token, Clock::now() + milliseconds(5000)).ok());
  msg::Register reg;
  reg.host = "127.0.0.1";
  REQUIRE(WriteFrame(agent.get(), wire::MsgType::kRegister, reg.Encode(), Clock::now() + milliseconds(5000)).ok());
  auto reserve = ReadFrame(agent.get(), Clock::now() + milliseconds(5000));
  REQUIRE(reserve.ok());
  CHECK(reserve->type == wire::MsgType::kReserve);
  const long growth = RssBytes() - before;
  INFO("RSS growth " << growth / 1024 << " KiB for 100 x 16 MiB headers");
  CHECK(growth < 16L * 1024 * 1024);  // less than one announced frame, for all hundred
  for (auto& fd : hostile) CHECK(ClosedByServer(fd.get()));  // refused unread, not left to time out
}

TEST_CASE("coordinator: connections past max_unauthenticated wait unaccepted until a slot frees", "[coordinator]") {
  CoordinatorOptions o = TestOptions();
  o.max_unauthenticated = 8;
  Server s(o);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(s.Raw());
  // The ninth is in the listen backlog: no Challenge comes while 8 hold the handshake.
  auto waiting = StoreClient::Connect(s.coord->address(), StoreToken("topsecret", "jobX", 0), milliseconds(700));
  CHECK_FALSE(waiting.ok());
  CHECK(s.coord->accept_pauses() >= 1);
  idle.clear();  // their slots come free as the server sees them close
  auto c = StoreClient::Connect(s.coord->address(), StoreToken("topsecret", "jobX", 0), milliseconds(4000));
  REQUIRE(c.ok());
  CHECK((*c)->Set("alive", {1}).ok());
}

TEST_CASE("coordinator: a job id with a newline and terminal escapes is logged escaped", "[coordinator]") {
  StderrCapture err;
  {
    Server s;
    UniqueFd fd = s.Raw();
    Status st = ClientHandshake(fd.get(), AgentHello("x\n\x1b[31mdslaunch: all ok"), "topsecret",
                                Clock::now() + milliseconds(5000));
    CHECK(st.message() == "unknown job id 'x\\x0a\\x1b[31mdslaunch: all ok'");
  }
  std::string text = err.Text();
  INFO(text);
  CHECK(text.find("unknown job id 'x\\x0a\\x1b[31mdslaunch: all ok'; closing\n") != std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("\ndslaunch: all ok") == std::string::npos);
}

TEST_CASE("coordinator: 50 refused connections log a few lines in full, then one summary", "[coordinator]") {
  StderrCapture err;
  CoordinatorOptions o = TestOptions();
  o.reject_log_interval = 0.5;
  Server s(o);
  for (int i = 0; i < 50; ++i) {
    UniqueFd fd = s.Raw();
    Status st = ClientHandshake(fd.get(), AgentHello("other"), "topsecret", Clock::now() + milliseconds(5000));
    REQUIRE(st.message() == "unknown job id 'other'");
  }
  CHECK(err.WaitFor("47 more connections refused in the last 0.5 s, not logged one by one (47 authentication)"));
  std::string text = err.Text();
  INFO(text);
  CHECK(CountOf(text, "unknown job id 'other'; closing") == 3);
  CHECK(CountOf(text, "\n") == 4);
}

// The listener out of descriptors (RLIMIT_NOFILE, every fd taken) must wait,
// not retry accept at once: in a child process, measured from outside.
TEST_CASE("coordinator: out of file descriptors, accept backs off instead of spinning, and resumes",
          "[coordinator]") {
  int port_pipe[2], go_pipe[2];
  REQUIRE(::pipe(port_pipe) == 0);
  REQUIRE(::pipe(go_pipe) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(port_pipe[0]);
    ::close(go_pipe[1]);
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    LaunchPlan plan = OneNodePlan();
    JobRecord record;
    Coordinator coord(io, plan, TestOptions(), record);
    if (!coord.Listen().ok()) ::_exit(2);
    rlimit lim{64, 64};
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(3);
    std::vector<int> spare;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) spare.push_back(fd);
    std::thread loop([&] { io.run(); });
    int port = coord.port();
    if (::write(port_pipe[1], &port, sizeof(port)) != sizeof(port)) ::_exit(4);
    // Tells the parent when accept first backed off ('b'), or that it did not within 10 s ('n').
    const auto deadline = Clock::now() + milliseconds(10000);
    uint64_t backoffs = 0;
    while (backoffs == 0 && Clock::now() < deadline) {
      std::promise<uint64_t> p;
      asio::post(io, [&] { p.set_value(coord.accept_backoffs()); });
      backoffs = p.get_future().get();
    }
    if (::write(port_pipe[1], backoffs > 0 ? "b" : "n", 1) != 1) ::_exit(4);
    char go;
    if (::read(go_pipe[0], &go, 1) != 1) ::_exit(5);
    for (int fd : spare) ::close(fd);
    (void)!::read(go_pipe[0], &go, 1);  // until the parent is done
    ::_exit(0);
  }
  ::close(port_pipe[1]);
  ::close(go_pipe[0]);
  int port = 0;
  REQUIRE(::read(port_pipe[0], &port, sizeof(port)) == sizeof(port));
  std::string addr = "127.0.0.1:" + std::to_string(port);
  auto fd = ConnectTcp(addr, "", Clock::now() + milliseconds(5000));  // waits in the backlog
  REQUIRE(fd.ok());
  char backed_off = 0;
  REQUIRE(::read(port_pipe[0], &backed_off, 1) == 1);  // the child's first failed accept
  ::close(port_pipe[0]);
  REQUIRE(backed_off == 'b');
  const double cpu0 = CpuSeconds(pid);
  std::this_thread::sleep_for(milliseconds(1000));
  const double cpu = CpuSeconds(pid) - cpu0;
  INFO("coordinator CPU over 1 s while out of descriptors: " << cpu << " s");
  CHECK(cpu < 0.1);
  REQUIRE(::write(go_pipe[1], "g", 1) == 1);  // descriptors free again
  msg::Hello h;
  h.role = wire::Role::kStore;
  CHECK(ClientHandshake(fd->get(), h, StoreToken("topsecret", "jobX", 0), Clock::now() + milliseconds(5000)).ok());
  ::close(go_pipe[1]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace ds
