#include "sim/coordinator_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/asio.h"
#include "common/fd_limit.h"
#include "launcher/config/hostfile.h"
#include "launcher/cmd/job_leader.h"
#include "launcher/config/selection.h"
#include "launcher/coordinator/coordinator.h"
#include "launcher/coordinator/job_state.h"
#include "sim/sim_watch.h"

namespace ds::sim {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// The child: the job's plan, the real Coordinator, its io loop.
[[noreturn]] void RunChild(const CoordinatorSpec& spec, int report_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (Status st = RaiseFdLimit(SimDescriptors(spec.nodes, spec.slots, spec.store), "the coordinator"); !st.ok()) {
    WriteAll(report_fd, "error " + st.message() + "\n");
    ::_exit(2);
  }
  std::vector<SelectedHost> hosts;
  for (int i = 0; i < spec.nodes; ++i) {
    SelectedHost h;
    h.host.name = fmt::format("sim{}", i);
    h.host.slots = spec.slots;
    for (int s = 0; s < spec.slots; ++s) h.slots.push_back(s);
    hosts.push_back(std::move(h));
  }
  JobSpec job;
  job.command = {"/bin/true"};  // never run: the agents are simulated
  job.elastic.max_restarts = spec.max_restarts;
  job.elastic.min_nodes = 1;
  job.elastic.heartbeat_interval = spec.heartbeat_interval;
  job.elastic.heartbeat_timeout = spec.heartbeat_timeout;
  auto plan = MakePlan(hosts, job, /*use_gpus=*/false);
  if (!plan.ok()) {
    WriteAll(report_fd, "error " + plan.status().message() + "\n");
    ::_exit(2);
  }
  CoordinatorOptions o;
  o.job_id = spec.job_id;
  o.secret = spec.secret;
  o.argv = job.command;
  o.heartbeat_interval = spec.heartbeat_interval;
  o.heartbeat_timeout = spec.heartbeat_timeout;
  o.register_timeout = 600;
  o.notice = [](const std::string&) {};  // restarts are what the fleet measures
  asio::io_context io;
  JobRecord record;
  Coordinator coord(io, *plan, o, record);
  if (Status st = coord.Listen(); !st.ok()) {
    WriteAll(report_fd, "error " + st.message() + "\n");
    ::_exit(2);
  }
  for (int i = 0; i < spec.nodes; ++i) coord.EnrollAgent(i, spec.agent_token);  // simulated agents share one
  std::unique_ptr<failover::LeaderSession> leader;
  long long offered = 0, state_bytes = 0;
  if (!spec.etcd.empty()) {
    job.coordinator.etcd = {spec.etcd};
    auto led = LeadJob(job, spec.job_id, coord.address());
    if (!led.ok()) {
      WriteAll(report_fd, "error --etcd: " + led.status().message() + "\n");
      ::_exit(2);
    }
    leader = std::move(led).value();
    coord.OnStateChange([&](const JobState& s) {
      std::string text = EncodeJobState(s, RealClock().Now());
      ++offered;
      state_bytes = static_cast<long long>(text.size());
      leader->Offer(std::move(text));
    });
    coord.SetFencing([&leader] { return leader->Leads() ? static_cast<uint64_t>(leader->token()) : 0; },
                     [&leader] { return leader->ConfirmedAt(); });
  }
  std::unique_ptr<SimWatch> watch;
  if (spec.watch) {
    watch = std::make_unique<SimWatch>(io, coord, record);
    if (Status st = watch->Start(); !st.ok()) {
      WriteAll(report_fd, "error --watch: " + st.message() + "\n");
      ::_exit(2);
    }
  }
  coord.OnDone([&io, &watch] {
    if (watch) watch->Stop();
    io.stop();
  });
  WriteAll(report_fd, fmt::format("port {}\n", coord.port()));
  NoFleetEvents fleet;  // the simulated agents are nobody's processes
  coord.Start(fleet);
  io.run();
  long long writes = -1;
  if (leader) {
    (void)leader->Flush(10);  // what it could not write shows as fewer writes
    writes = static_cast<long long>(leader->writes());
    leader->Stop();
  }
  WriteAll(report_fd, fmt::format("end {} {} {} {} {} {} {}\n", record.ExitCode(), coord.control().restarts(),
                                  coord.control().generation(), coord.control().world_size(),
                                  leader ? offered : -1, writes, leader ? state_bytes : -1));
  ::_exit(0);
}

// Reads one line from fd within `timeout`.
Result<std::string> ReadLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0)
      return Status::Timeout("the coordinator process did not answer in time");
    char c;
    ssize_t n = ::read(fd, &c, 1);
    if (n == 0) return Status::Unavailable("the coordinator process ended without a report");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IOError("reading the coordinator's report failed");
    }
    if (c == '\n') return line;
    line += c;
  }
}

}  // namespace

Result<std::unique_ptr<CoordinatorProcess>> CoordinatorProcess::Start(const CoordinatorSpec& spec) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return Status::IOError("pipe failed");
  ::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IOError("fork failed");
  if (pid == 0) {
    ::close(p[0]);
    RunChild(spec, p[1]);
  }
  ::close(p[1]);
  std::unique_ptr<CoordinatorProcess> c(new CoordinatorProcess(pid, p[0]));
  DS_ASSIGN_OR_RETURN(std::string line, ReadLine(p[0], std::chrono::seconds(30)));
  if (line.rfind("port ", 0) != 0) return Status::Unavailable("coordinator: " + line);
  c->port_ = std::stoi(line.substr(5));
  return c;
}

CoordinatorProcess::~CoordinatorProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::close(report_fd_);
}

ProcessUsage CoordinatorProcess::Usage() const {
  ProcessUsage u;
  std::ifstream sched(fmt::format("/proc/{}/schedstat", pid_));
  uint64_t run_ns = 0;
  if (sched >> run_ns) u.cpu_seconds = static_cast<double>(run_ns) / 1e9;
  std::ifstream status(fmt::format("/proc/{}/status", pid_));
  std::string key;
  long value = 0;
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream in(line);
    if (!(in >> key >> value)) continue;
    if (key == "VmRSS:") u.rss_kib = value;
    if (key == "VmHWM:") u.peak_rss_kib = value;
  }
  return u;
}

Result<CoordinatorEnd> CoordinatorProcess::Wait(std::chrono::milliseconds timeout) {
  CoordinatorEnd end;
  DS_ASSIGN_OR_RETURN(std::string line, ReadLine(report_fd_, timeout));
  if (std::sscanf(line.c_str(), "end %d %d %d %d %lld %lld %lld", &end.job_exit_code, &end.restarts, &end.generation,
                  &end.world_size, &end.states_offered, &end.etcd_writes, &end.state_bytes) != 7)
    return Status::Unavailable("coordinator: " + line);
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_) {
    reaped_ = true;
    end.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return end;
}

}  // namespace ds::sim
