#include "launcher/cmd/report_cmd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/files.h"
#include "common/private_dir.h"
#include "common/unique_fd.h"
#include "launcher/report/job_view_json.h"
#include "launcher/report/run_report.h"
#include "launcher/report/run_report_json.h"

namespace ds {
namespace {

constexpr const char* kUsage = "usage: dslaunch report [JOB] [-o FILE]";
constexpr size_t kMaxRecord = 64 << 20;

// The newest record <name>.json whose name starts with `job` ("": any); "" when none.
std::string Newest(const PrivateDir& dir, const std::string& job) {
  UniqueFd fd(::openat(dir.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = fd.get() >= 0 ? ::fdopendir(fd.release()) : nullptr;
  if (d == nullptr) return "";
  std::string best;
  struct timespec best_time{};
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() <= 5 || n.compare(n.size() - 5, 5, ".json") != 0 || n.rfind(job, 0) != 0) continue;
    struct stat st{};
    if (::fstatat(dir.fd.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    const bool newer = best.empty() || st.st_mtim.tv_sec > best_time.tv_sec ||
                       (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec > best_time.tv_nsec);
    if (newer) best = n.substr(0, n.size() - 5), best_time = st.st_mtim;
  }
  ::closedir(d);
  return best;
}

Result<std::string> ReadRecord(const PrivateDir& dir, const std::string& name) {
  const std::string path = fmt::format("{}/{}.json", dir.path, name);
  UniqueFd fd(::openat(dir.fd.get(), (name + ".json").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return Status::NotFound(fmt::format("report: {}: {}", path, std::strerror(errno)));
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) > 0) {
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxRecord) return Status::InvalidArgument(fmt::format("report: {}: larger than 64 MiB", path));
  }
  return text;
}

// `what` names the page in the line that says where it went.
Status Write(const std::string& file, const std::string& html, const std::string& what, std::ostream& out) {
  if (file == "-") {
    out << html;
    return Status::OK();
  }
  // The working directory may be shared: a name others can guess (job id and
  // pid are in `ps`) is never opened, only renamed over, and only when it is
  // ours; the page is as private as the record (0600).
  if (Status st = ReplaceOwnFile(file, html, 0600); !st.ok()) return st.Prefixed("report");
  out << "dslaunch: " << what << " written to " << file << "\n";
  return Status::OK();
}

}  // namespace

Result<int> RunReport(const std::vector<std::string>& args, std::ostream& out) {
  std::string job, file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << kUsage << "\n  writes one HTML page (a timeline per node, restarts and their causes, samples/s)\n"
                       "  from the record an ended job left; JOB as `dslaunch status` takes it\n";
      return 0;
    } else if (a == "-o" || a == "--output") {
      if (i + 1 == args.size()) return Status::InvalidArgument(fmt::format("report: {} needs a FILE: {}", a, kUsage));
      file = args[++i];
    } else if (!a.empty() && a[0] != '-' && job.empty()) {
      job = a;
    } else {
      return Status::InvalidArgument(fmt::format("report: unexpected '{}': {}", a, kUsage));
    }
  }
  DS_ASSIGN_OR_RETURN(PrivateDir dir, OpenPrivateDir());
  const std::string name = Newest(dir, job);
  if (name.empty())
    return Status::NotFound(job.empty() ? fmt::format("report: no job record in {} (a job leaves <job>-<pid>.json "
                                                      "there when it ends)", dir.path)
                                        : fmt::format("report: no record of job {} in {} (a job leaves "
                                                      "<job>-<pid>.json there when it ends; `dslaunch status "
                                                      "--all` lists them)", job, dir.path));
  DS_ASSIGN_OR_RETURN(std::string text, ReadRecord(dir, name));
  const std::string what = fmt::format("report: {}/{}.json", dir.path, name);
  Result<JobView> view = ParseJobViewJson(text);
  if (!view.ok()) return Status::InvalidArgument(fmt::format("{}: not a job record: {}", what, view.status().message()));
  DS_ASSIGN_OR_RETURN(RunTimeline timeline, ParseTimeline(text, what));
  DS_ASSIGN_OR_RETURN(RecordEnding ending, ParseEnding(text, what));
  // With no JOB the newest record was chosen: say which, and how to choose another.
  const std::string page = job.empty() ? fmt::format("report of {} (your newest job; `dslaunch report JOB` for "
                                                     "another, `dslaunch status --all` lists them)", name)
                                       : "report of " + name;
  DS_RETURN_IF_ERROR(Write(file.empty() ? "dslaunch-report-" + name + ".html" : file,
                           RunReportHtml(*view, timeline, ending), page, out));
  return 0;
}

}  // namespace ds
