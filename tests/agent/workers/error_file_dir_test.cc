// agent/workers/error_file_dir: the private per-agent directory and the reader that
// trusts only a regular file of the worker's own, of bounded size. Files
// only: no child processes.
#include "agent/workers/error_file_dir.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

using testing::TempDir;
using testing::WriteFile;

const char kRecord[] =
    R"({"message": {"message": "ValueError: boom", "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nValueError: boom\n", "timestamp": "1"}}})";

// Points $TMPDIR at a test directory for one scope.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const std::string& dir) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old, had_ = true;
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdir() { had_ ? ::setenv("TMPDIR", old_.c_str(), 1) : ::unsetenv("TMPDIR"); }

 private:
  std::string old_;
  bool had_ = false;
};

TEST_CASE("error files: a private 0700 directory per agent, a name per generation and rank, gone at the end",
          "[errorfile]") {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::string dir;
  {
    ErrorFileDir files;
    CHECK(files.dir().empty());
    auto p0 = files.Prepare(0, 3);
    REQUIRE(p0.ok());
    dir = files.dir();
    CHECK(dir.rfind(tmp.path() + "/dsagent-errors.", 0) == 0);
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    CHECK(*p0 == dir + "/error-g0-r3.json");
    CHECK(*files.Prepare(1, 3) == dir + "/error-g1-r3.json");
    ErrorFileDir other;
    REQUIRE(other.Prepare(0, 3).ok());
    CHECK(other.dir() != dir);  // unique per agent
    // A stale file (or a directory) in the way is removed before the worker starts.
    WriteFile(*p0, kRecord);
    CHECK(*files.Prepare(0, 3) == *p0);
    CHECK_FALSE(std::filesystem::exists(*p0));
    std::filesystem::create_directory(*p0);
    REQUIRE(files.Prepare(0, 3).ok());
    CHECK_FALSE(std::filesystem::exists(*p0));
    WriteFile(dir + "/left-behind", "x");
  }
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("error files: what a killed agent left is removed by the next one, nothing else", "[errorfile]") {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  // No process has a pid of pid_max or more: a dead agent's for sure.
  const std::string dead = std::to_string(std::stol(testing::ReadFile("/proc/sys/kernel/pid_max")));
  const std::string stale = tmp / ("dsagent-errors." + dead + ".abc123");
  const std::string alive = tmp / ("dsagent-errors." + std::to_string(::getppid()) + ".abc123");
  const std::string link = tmp / ("dsagent-errors." + dead + ".link");
  const std::string other_name = tmp / ("dsagent-errors.x" + dead + ".abc");
  for (const std::string& d : {stale, alive, other_name, tmp / "kept-target"}) std::filesystem::create_directory(d);
  WriteFile(stale + "/error-g0-r1.json", kRecord);
  std::filesystem::create_directory_symlink(tmp / "kept-target", link);
  WriteFile(tmp / "kept-target/file", "x");

  ErrorFileDir files;
  REQUIRE(files.Prepare(0, 0).ok());
  CHECK(files.dir().rfind(tmp / ("dsagent-errors." + std::to_string(::getpid()) + "."), 0) == 0);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(alive));        // its agent may still run
  CHECK(std::filesystem::is_symlink(link));     // not a directory of ours
  CHECK(std::filesystem::exists(tmp / "kept-target/file"));
  CHECK(std::filesystem::exists(other_name));   // not our name
}

TEST_CASE("error files: the worker's own regular file is read and parsed", "[errorfile]") {
  TempDir tmp;
  WriteFile(tmp / "e.json", kRecord);
  auto e = ReadWorkerErrorFile(tmp / "e.json", ::geteuid());
  REQUIRE(e);
  CHECK(e->message == "ValueError: boom");
  CHECK(e->traceback.find("File \"t.py\", line 1") != std::string::npos);
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "missing.json", ::geteuid()));
}

TEST_CASE("error files: a symlink, another owner, a directory, a FIFO, a huge or malformed file are not trusted",
          "[errorfile]") {
  TempDir tmp;
  WriteFile(tmp / "real.json", kRecord);
  REQUIRE(::symlink((tmp / "real.json").c_str(), (tmp / "link.json").c_str()) == 0);
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "link.json", ::geteuid()));
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "real.json", ::geteuid() + 1));  // foreign owner
  std::filesystem::create_directory(tmp / "dir.json");
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "dir.json", ::geteuid()));
  REQUIRE(::mkfifo((tmp / "fifo.json").c_str(), 0600) == 0);
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "fifo.json", ::geteuid()));  // and does not block
  WriteFile(tmp / "huge.json", std::string(kMaxErrorFileBytes + 1, ' ') + kRecord);
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "huge.json", ::geteuid()));
  WriteFile(tmp / "bad.json", "{\"message\": ");
  CHECK_FALSE(ReadWorkerErrorFile(tmp / "bad.json", ::geteuid()));
}

}  // namespace
}  // namespace ds
