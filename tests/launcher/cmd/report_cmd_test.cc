// `dslaunch report` writes its page where others may write too (the working
// directory), under a name they can guess (job id and pid are in `ps`):
// issue 42 item 3, a planted symlink made the old code truncate its target.
#include "launcher/cmd/report_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <catch2/catch.hpp>

#include "common/private_dir.h"
#include "launcher/report/job_view_json.h"
#include "launcher/report/run_report_json.h"
#include "tests/test_util/files.h"
#include "tests/test_util/other_user.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

// Runs `report` with the private directory under `runtime`, in `cwd`.
Result<int> ReportIn(const std::string& runtime, const std::string& cwd, const std::vector<std::string>& args) {
  const std::string here = std::filesystem::current_path().string();
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  REQUIRE(::chdir(cwd.c_str()) == 0);
  std::ostringstream out;
  Result<int> r = RunReport(args, out);
  REQUIRE(::chdir(here.c_str()) == 0);
  ::unsetenv("XDG_RUNTIME_DIR");
  return r;
}

TEST_CASE("report: a symlink or another user's file at the page's name is refused, never written through; the page "
          "is 0600",
          "[report][other_user]") {
  if (!testing::CanActAsNobody()) DS_SKIP(testing::kNeedsOtherUser);
  testing::TempDir runtime("dsl-test-runtime");
  REQUIRE(::chmod(runtime.path().c_str(), 0700) == 0);
  {
    auto dir = OpenPrivateDirIn(runtime.path(), "dslaunch");
    REQUIRE(dir.ok());
    JobView v;
    v.job_id = "j1";
    auto record = WithTimeline(JobViewJson(v), RunTimeline{});
    REQUIRE(record.ok());
    testing::WriteFile(dir->path + "/j1-42.json", *record);
  }
  testing::SharedDir work;
  const std::string victim = work.base + "/victim", page = work.shared + "/dslaunch-report-j1-42.html";
  testing::WriteFile(victim, "root's only\n");
  REQUIRE(::chmod(victim.c_str(), 0600) == 0);
  REQUIRE(testing::AsNobody({"ln", "-s", victim, page}));
  Result<int> linked = ReportIn(runtime.path(), work.shared, {});
  CHECK(linked.status().message() == "report: dslaunch-report-j1-42.html is a symbolic link: refusing to write through it");
  CHECK(testing::ReadFile(victim) == "root's only\n");
  const std::string theirs = work.shared + "/page.html";
  REQUIRE(testing::WriteAsNobody(theirs, "theirs"));
  Result<int> other = ReportIn(runtime.path(), work.shared, {"-o", theirs});
  CHECK(other.status().message() == "report: file " + theirs + " is owned by uid 65534, not by this user (uid " +
                                        std::to_string(::geteuid()) + "): refusing to replace it");
  CHECK(testing::ReadFile(theirs) == "theirs");
  const std::string mine = work.base + "/mine.html";
  REQUIRE(ReportIn(runtime.path(), work.base, {"-o", mine}).ok());
  struct stat st;
  REQUIRE(::stat(mine.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(testing::ReadFile(mine).find("<html") != std::string::npos);
  REQUIRE(ReportIn(runtime.path(), work.base, {"-o", mine}).ok());  // ours: replaced
}

}  // namespace
}  // namespace ds
