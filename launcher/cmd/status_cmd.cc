#include "launcher/cmd/status_cmd.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "common/private_dir.h"
#include "common/unique_fd.h"
#include "launcher/cmd/job_list.h"
#include "common/strings.h"
#include "launcher/report/job_view_json.h"
#include "launcher/report/run_report_json.h"
#include "launcher/report/status_table.h"

namespace ds {
namespace {

constexpr int kReadTimeoutMs = 5000;
constexpr size_t kMaxReply = 16 << 20;

struct Found {
  std::string name;   // <job>-<pid>
  bool live = false;  // a .sock (else a .json record)
  time_t mtime = 0;
  int64_t mtime_ns = 0;  // the same to the nanosecond: the order of jobs ended in one second
};

std::vector<Found> List(const PrivateDir& dir) {
  std::vector<Found> out;
  UniqueFd fd(::openat(dir.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = fd.get() >= 0 ? ::fdopendir(fd.release()) : nullptr;
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    for (const char* ext : {".sock", ".json"}) {
      const size_t len = std::strlen(ext);
      if (n.size() <= len || n.compare(n.size() - len, len, ext) != 0) continue;
      struct stat st{};
      ::fstatat(dir.fd.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW);
      out.push_back({n.substr(0, n.size() - len), ext[1] == 's', st.st_mtime,
                     static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    }
  }
  ::closedir(d);
  return out;
}

// A job whose socket stays but whose dslaunch is gone (SIGKILL, a crash,
// the machine's OOM killer) could leave no record. Its socket is removed
// (the directory is ours) and it moves from `found` to what is returned, so
// what status shows next can say that a newer job ended unrecorded. The pid
// is the name's last part (<job>-<pid>); a pid that is alive, if reused,
// keeps the socket: harmless.
std::vector<Found> SweepVanished(const PrivateDir& dir, std::vector<Found>* found) {
  std::vector<Found> gone;
  for (auto it = found->begin(); it != found->end();) {
    const size_t dash = it->name.rfind('-');
    const long pid = dash == std::string::npos ? 0 : std::strtol(it->name.c_str() + dash + 1, nullptr, 10);
    if (!it->live || pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) {
      ++it;
      continue;
    }
    ::unlinkat(dir.fd.get(), (it->name + ".sock").c_str(), 0);
    gone.push_back(*it);
    it = found->erase(it);
  }
  return gone;
}

// One line per job of `gone` newer than `than` (mtime in ns; 0 = all).
std::string VanishedLines(const PrivateDir& dir, const std::vector<Found>& gone, int64_t than) {
  std::string out;
  for (const Found& g : gone)
    if (g.mtime_ns > than)
      out += fmt::format("(job {} ended without a record: its dslaunch was killed, by SIGKILL or a crash; its "
                         "stale socket {}/{}.sock is removed)\n", g.name, dir.path, g.name);
  return out;
}

// The view a live job's socket answers. Error: refused (a job that died
// without its record), unreadable, not a view.
Result<JobView> Ask(const PrivateDir& dir, const std::string& name) {
  const std::string path = dir.path + "/" + name + ".sock";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) return Status::InvalidArgument(path + ": path too long");
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    return Status::Unavailable(fmt::format("{}: {}", path, std::strerror(errno)));
  std::string text;
  char buf[65536];
  for (;;) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, kReadTimeoutMs) <= 0) return Status::Unavailable(path + ": no answer within 5 s");
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) return Status::Unavailable(fmt::format("{}: {}", path, std::strerror(errno)));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxReply) return Status::Unavailable(path + ": answer too large");
  }
  return ParseJobViewJson(text);
}

// An ended job's record: its view and how it ended (run_report_json.h).
struct Record {
  JobView view;
  RecordEnding ending;
};

Result<Record> ReadRecord(const PrivateDir& dir, const std::string& name) {
  UniqueFd fd(::openat(dir.fd.get(), (name + ".json").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return Status::NotFound(fmt::format("{}/{}.json: {}", dir.path, name, std::strerror(errno)));
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0 && text.size() < kMaxReply) text.append(buf, n);
  DS_ASSIGN_OR_RETURN(JobView view, ParseJobViewJson(text));
  DS_ASSIGN_OR_RETURN(RecordEnding ending, ParseEnding(text, fmt::format("{}/{}.json", dir.path, name)));
  return Record{std::move(view), std::move(ending)};
}

// An ended job as `status` shows it: its table, then how it ended (the
// summary dslaunch printed then) when the record kept it, and where its
// logs and its last hang's stacks are.
std::string PrintEnded(const Record& r, bool json) {
  if (json) return JobViewJson(r.view);
  std::string out = StatusTable(r.view);
  if (!r.ending.summary.empty()) out += "how it ended:\n" + r.ending.summary;
  if (!r.ending.hang_report.empty()) out += "the last hang (ranks grouped by stack):\n";
  for (const std::string& line : r.ending.hang_report) out += "  " + line + "\n";
  if (!r.ending.stacks_path.empty()) out += "hang stacks: " + r.ending.stacks_path + "\n";
  else if (!r.ending.hang_stacks.empty())
    out += fmt::format("hang stacks: in the record (dslaunch report {} shows them)\n", r.view.job_id);
  if (!r.ending.log_dir.empty()) out += "logs: " + r.ending.log_dir + "\n";
  return out;
}

std::string Print(const JobView& v, bool json) { return json ? JobViewJson(v) : StatusTable(v); }

// --all: every job `found` names, running (from its socket) or ended (its
// record), newest first. A job's start is its view's time less its elapsed
// time: now for a running one, the record's mtime for an ended one.
std::vector<JobListEntry> Every(const PrivateDir& dir, const std::vector<Found>& found) {
  std::vector<JobListEntry> out;
  const time_t now = ::time(nullptr);
  for (const Found& f : found) {
    const bool running = std::any_of(found.begin(), found.end(), [&](const Found& g) { return g.live && g.name == f.name; });
    if (!f.live && running) continue;  // the socket's answer is newer than a record of the same name
    if (f.live) {
      Result<JobView> v = Ask(dir, f.name);
      if (v.ok()) out.push_back({*v, true, now - static_cast<time_t>(v->elapsed_seconds), ""});
      continue;  // else a job killed before it could leave a record
    }
    Result<Record> r = ReadRecord(dir, f.name);
    if (!r.ok()) continue;  // a record that is not one
    const time_t started = r->ending.started > 0 ? static_cast<time_t>(r->ending.started)
                                                 : f.mtime - static_cast<time_t>(r->view.elapsed_seconds);
    std::string command;
    for (const std::string& a : r->ending.argv) command += (command.empty() ? "" : " ") + ShellQuote(a);
    out.push_back({r->view, false, started, command});
  }
  return out;
}

}  // namespace

Result<JobEnding> EndedJob(const PrivateDir& dir, const std::string& job) {
  const Found* newest = nullptr;
  const std::vector<Found> found = List(dir);
  for (const Found& f : found)
    if (!f.live && f.name.rfind(job, 0) == 0 && f.name.find('-') != std::string::npos &&
        (!newest || f.mtime_ns > newest->mtime_ns))
      newest = &f;
  if (!newest) return Status::NotFound(fmt::format("no job {} left a record in {}", job, dir.path));
  DS_ASSIGN_OR_RETURN(Record r, ReadRecord(dir, newest->name));
  return JobEnding{r.view.job_id, r.view.exit_code, r.ending.summary};
}

Result<int> RunStatus(const std::vector<std::string>& args, std::ostream& out) {
  bool json = false, all = false;
  std::string job;
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else if (a == "--all") all = true;
    else if (a == "-h" || a == "--help") {
      out << "usage: dslaunch status [--json] [--all | JOB]\n"
             "  without JOB: this user's running jobs, else the newest ended one; --all: every job, one line each\n";
      return 0;
    } else if (!a.empty() && a[0] != '-' && job.empty()) job = a;
    else return Status::InvalidArgument(fmt::format("status: unexpected '{}': usage: dslaunch status [--json] [--all | JOB]", a));
  }
  if (all && !job.empty())
    return Status::InvalidArgument("status: --all lists every job; to see one, give its JOB without --all");
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  std::vector<Found> found = List(dir);
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime_ns > b.mtime_ns; });
  const std::vector<Found> gone = SweepVanished(dir, &found);
  if (all) {
    const std::vector<JobListEntry> jobs = Every(dir, found);
    if (!json) out << VanishedLines(dir, gone, 0);
    if (jobs.empty() && gone.empty())
      return Status::NotFound(fmt::format("status: no job of yours in {} (a running job has a socket there, an "
                                          "ended one its record)", dir.path));
    if (json)
      for (const JobListEntry& e : jobs) out << JobViewJson(e.view);
    else
      out << JobListTable(jobs);
    return 0;
  }
  int shown = 0;
  for (const Found& f : found) {  // live jobs (with JOB: that one, live or from its record)
    if (!job.empty() && f.name.rfind(job, 0) != 0) continue;
    if (f.live) {
      Result<JobView> v = Ask(dir, f.name);
      if (!v.ok()) continue;  // a job killed before it could leave a record
      out << Print(*v, json);
      ++shown;
    } else if (!job.empty() && std::none_of(found.begin(), found.end(), [&](const Found& g) {
                 return g.live && g.name == f.name;
               })) {
      DS_ASSIGN_OR_RETURN(Record r, ReadRecord(dir, f.name));
      out << PrintEnded(r, json);
      ++shown;
    }
  }
  if (shown > 0) return 0;
  if (job.empty())
    for (const Found& f : found)
      if (!f.live) {  // nothing running: the newest record, after any newer job that left none
        DS_ASSIGN_OR_RETURN(Record r, ReadRecord(dir, f.name));
        if (!json) out << VanishedLines(dir, gone, f.mtime_ns);
        out << PrintEnded(r, json);
        if (!json)
          out << "(nothing of yours is running: this is your newest ended job; dslaunch status --all lists every "
                 "job, dslaunch status JOB shows one)\n";
        return 0;
      }
  if (job.empty() && !json) out << VanishedLines(dir, gone, 0);
  return Status::NotFound(job.empty() ? fmt::format("status: no job of yours in {} (a running job has a socket "
                                                    "there, an ended one its record)", dir.path)
                                      : fmt::format("status: no job {} in {}", job, dir.path));
}

}  // namespace ds
