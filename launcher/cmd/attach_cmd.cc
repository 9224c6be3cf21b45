#include "launcher/cmd/attach_cmd.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/private_dir.h"
#include "common/strings.h"
#include "launcher/cmd/status_cmd.h"
#include "launcher/report/log_mux.h"
#include "wire/attach_file.h"
#include "wire/client_conn.h"
#include "wire/wire_format.h"

namespace ds {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kDefaultWait = 120;
constexpr auto kConnectTimeout = std::chrono::seconds(2);
// The leader sends the status line whenever its text changes (its elapsed
// time does every second): this much silence means it is gone.
constexpr auto kSilence = std::chrono::seconds(15);
constexpr auto kRetryPause = std::chrono::milliseconds(500);
constexpr const char* kUsage = "usage: dslaunch attach [--wait SECONDS] [JOB]";

struct AttachArgs {
  std::string job;  // a job id or its start; "" = the only job here
  double wait = kDefaultWait;
};

Result<AttachArgs> ParseAttachArgs(const std::vector<std::string>& args) {
  AttachArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s == "--wait" && i + 1 < args.size()) {
      const std::optional<double> v = ParseSeconds(args[++i]);
      if (!v || *v < 0)
        return Status::InvalidArgument(
            fmt::format("attach: --wait '{}': expected a duration, e.g. 120 or 2m", Printable(args[i])));
      a.wait = *v;
    } else if (!s.empty() && s[0] != '-' && a.job.empty()) {
      a.job = s;
    } else {
      return Status::InvalidArgument(fmt::format("attach: unexpected '{}': {}", Printable(s), kUsage));
    }
  }
  return a;
}

// Where to try, in order: each file's addresses with its key, then those a
// leader named (any key of the job opens any of its leaders).
struct Target {
  std::string address;
  uint32_t node = 0;
  std::string key;
};

std::vector<Target> Targets(const std::vector<AttachFile>& files, const std::vector<std::string>& named) {
  std::vector<Target> out;
  std::set<std::pair<std::string, uint32_t>> seen;
  auto add = [&](const std::string& address, const AttachFile& f) {
    if (seen.insert({address, f.node}).second) out.push_back({address, f.node, f.key});
  };
  for (const AttachFile& f : files)
    for (const std::string& a : f.coordinators) add(a, f);
  for (const std::string& a : named)
    for (const AttachFile& f : files) add(a, f);
  return out;
}

// The job JOB names among the attach files here (the only one without JOB).
Result<std::string> ChooseJob(const std::vector<AttachFile>& files, const std::string& prefix, const PrivateDir& dir) {
  std::set<std::string> jobs;
  for (const AttachFile& f : files)
    if (f.job_id.rfind(prefix, 0) == 0) jobs.insert(f.job_id);
  if (jobs.empty())
    return Status::NotFound(fmt::format(
        "attach: no {}job of yours runs on this host: {} holds no {}*.attach.* file (each agent of a job keeps one "
        "there while it runs, and so does the dslaunch that leads it); dslaunch status --all lists ended jobs",
        prefix.empty() ? "" : "'" + prefix + "' ", dir.path, prefix));
  if (jobs.size() > 1)
    return Status::InvalidArgument(fmt::format("attach: {} jobs of yours run on this host ({}): say which, "
                                               "e.g. dslaunch attach {}", jobs.size(), fmt::join(jobs, ", "),
                                               *jobs.begin()));
  return *jobs.begin();
}

// A job that ended `when` (its attach files gone) and left its record on
// this host: its summary, and its exit code to exit with; nullopt without a
// record.
std::optional<int> TellEnded(const PrivateDir& dir, const std::string& job, const char* when) {
  Result<JobEnding> end = EndedJob(dir, job);
  if (!end.ok() || end->exit_code < 0) return std::nullopt;
  std::cerr << fmt::format("dslaunch attach: job {} ended {}; its record here says:\n{}", end->job_id, when,
                           end->summary.empty() ? fmt::format("exit code {}\n", end->exit_code) : end->summary);
  return end->exit_code;
}

// Renders what one leader sends; keeps the terminal (LogMux) across leaders.
class Follower {
 public:
  Follower()
      : mux_([] {
          LogMuxOptions o{"", "auto", stdout, ::isatty(STDOUT_FILENO) != 0};
          o.err_is_tty = ::isatty(STDERR_FILENO) != 0;
          o.status_line = true;
          return o;
        }()) {}

  // Follows `fd` until the job's end (its exit code) or the connection's
  // end (nullopt, `why` says how). `named` gets the leader's list.
  std::optional<int> Follow(int fd, std::vector<std::string>* named, std::string* why) {
    for (;;) {
      Result<Frame> f = ReadFrame(fd, Clock::now() + kSilence);
      if (!f.ok()) {
        *why = f.status().code() == Status::Code::kTimeout
                   ? fmt::format("nothing for {} s", std::chrono::duration_cast<std::chrono::seconds>(kSilence).count())
                   : f.status().message();
        return std::nullopt;
      }
      Status st = Handle(*f, named);
      if (ended_) return exit_code_;
      if (!st.ok()) {
        *why = st.message();
        return std::nullopt;
      }
    }
  }
  void Notice(const std::string& line) { mux_.Notice("dslaunch attach: " + line); }
  void Flush() { mux_.Flush(); }

 private:
  Status Handle(const Frame& f, std::vector<std::string>* named) {
    switch (f.type) {
      case wire::MsgType::kAttached: {
        DS_ASSIGN_OR_RETURN(msg::Attached m, msg::Attached::Decode(f.payload));
        for (const std::string& line : Split(m.history, '\n'))
          if (!line.empty()) mux_.Notice(line);
        *named = m.coordinators;
        return Status::OK();
      }
      case wire::MsgType::kAttachLine: {
        DS_ASSIGN_OR_RETURN(msg::AttachLine m, msg::AttachLine::Decode(f.payload));
        if (m.rank < 0) {
          mux_.Notice(m.line);
          return Status::OK();
        }
        auto& known = ranks_[m.rank];
        if (known != std::make_pair(m.host, m.local_rank)) {
          known = {m.host, m.local_rank};
          mux_.AddRank(m.rank, m.host, m.local_rank);
        }
        mux_.Line(m.rank, m.stream, m.line);
        return Status::OK();
      }
      case wire::MsgType::kAttachStatus: {
        DS_ASSIGN_OR_RETURN(msg::AttachStatus m, msg::AttachStatus::Decode(f.payload));
        mux_.SetStatus(m.text);
        return Status::OK();
      }
      case wire::MsgType::kAttachEnd: {
        DS_ASSIGN_OR_RETURN(msg::AttachEnd m, msg::AttachEnd::Decode(f.payload));
        mux_.Flush();
        std::cerr << m.summary << std::flush;
        ended_ = true;
        exit_code_ = m.exit_code;
        return Status::OK();
      }
      case wire::MsgType::kError: {
        DS_ASSIGN_OR_RETURN(msg::Error m, msg::Error::Decode(f.payload));
        return Status::Unavailable("the coordinator said: " + Printable(m.message));
      }
      default:
        return Status::IOError(fmt::format("unexpected message type {}", static_cast<int>(f.type)));
    }
  }

  LogMux mux_;
  std::map<int, std::pair<std::string, int>> ranks_;  // rank -> host, local rank as declared to mux_
  bool ended_ = false;
  int exit_code_ = 0;
};

// One try at `t`: the connection, authenticated, or why not.
Result<UniqueFd> Connect(const Target& t, const std::string& job_id) {
  const Deadline deadline = Clock::now() + kConnectTimeout;
  DS_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(t.address, "", deadline));
  msg::Hello hello;
  hello.role = wire::Role::kAttach;
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  hello.name = name;
  hello.job_id = job_id;
  hello.node_index = t.node;
  DS_RETURN_IF_ERROR(ClientHandshake(fd.get(), hello, t.key, deadline));
  return fd;
}

}  // namespace

Result<int> RunAttach(const std::vector<std::string>& args) {
  if (std::find(args.begin(), args.end(), "--help") != args.end() ||
      std::find(args.begin(), args.end(), "-h") != args.end()) {
    std::cout << kUsage << "\n"
              << "  follows a running job of yours from any host of it: what happened before, then its output and\n"
                 "  status line live, through a coordinator failover; exits with the job's exit code when it ends.\n"
                 "  --wait: how long to look for a leader of the job (at the start, and after losing one); 120 s.\n";
    return 0;
  }
  DS_ASSIGN_OR_RETURN(AttachArgs a, ParseAttachArgs(args));
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  std::vector<std::string> skipped;
  std::vector<AttachFile> files = FindAttachFiles(dir, "", &skipped);
  for (const std::string& s : skipped) std::cerr << "dslaunch attach: skipped " << s << "\n";
  Result<std::string> chosen = ChooseJob(files, a.job, dir);
  if (!chosen.ok() && !a.job.empty())
    if (std::optional<int> code = TellEnded(dir, a.job, "already")) return *code;
  DS_ASSIGN_OR_RETURN(const std::string job, std::move(chosen));

  Follower follower;
  std::vector<std::string> named;  // the last leader's list of where a leader may be
  std::string last_error;
  Clock::time_point give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.wait));
  std::string following;  // the address followed last ("" = none yet)
  for (;;) {
    files = FindAttachFiles(dir, job, nullptr);  // the agents rewrite theirs when they find a new leader
    if (files.empty()) {
      follower.Flush();
      if (std::optional<int> code = TellEnded(dir, job, "before a leader answered")) return *code;
      return Status::NotFound(fmt::format("attach: job {}'s attach files are gone from {}: it ended; dslaunch "
                                          "status {} shows how", job, dir.path, job));
    }
    for (const Target& t : Targets(files, named)) {
      Result<UniqueFd> fd = Connect(t, job);
      if (!fd.ok()) {
        last_error = fmt::format("{}: {}", t.address, fd.status().message());
        continue;
      }
      follower.Notice(following.empty() ? fmt::format("following job {} at {}", job, t.address)
                                        : fmt::format("following job {}'s new leader at {}", job, t.address));
      std::string why;
      if (std::optional<int> code = follower.Follow(fd->get(), &named, &why)) return *code;
      follower.Notice(fmt::format("lost the coordinator at {} ({}); looking for its successor for up to {} s",
                                  t.address, why, a.wait));
      following = t.address;
      give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.wait));
      break;
    }
    if (Clock::now() >= give_up) {
      follower.Flush();
      return Status::Unavailable(fmt::format("attach: no leader of job {} answered within {} s (last: {})", job,
                                             a.wait, last_error));
    }
    std::this_thread::sleep_for(kRetryPause);  // a pause between rounds of tries, not a synchronisation
  }
}

}  // namespace ds
