// PidFile (--save_pid): exclusive creation, DeepSpeed's content, removal.
#include "launcher/cmd/pid_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

TEST_CASE("pid file: holds the pid while the object lives, then is gone") {
  testing::TempDir dir("dsl-pid");
  const std::string path = dir / "123.deepspeed";
  {
    auto f = PidFile::Create(path, 4242);
    INFO(f.status().message());
    REQUIRE(f.ok());
    CHECK(f->path() == path);
    CHECK(testing::ReadFile(path) == "4242");  // DeepSpeed writes the bare number
    PidFile moved = std::move(f).value();
    CHECK(Exists(path));
  }
  CHECK_FALSE(Exists(path));
}

TEST_CASE("pid file: never overwrites, never follows a symlink") {
  testing::TempDir dir("dsl-pid");
  const std::string path = dir / "1.deepspeed";
  testing::WriteFile(path, "someone else's");
  auto f = PidFile::Create(path, 1);
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message() == "--save_pid: " + path + " exists already; not overwriting it");
  CHECK(testing::ReadFile(path) == "someone else's");  // untouched, and not removed

  const std::string target = dir / "target";
  const std::string link = dir / "2.deepspeed";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);  // dangling: O_CREAT alone would create target
  auto l = PidFile::Create(link, 2);
  REQUIRE_FALSE(l.ok());
  CHECK_FALSE(Exists(target));

  auto missing = PidFile::Create(dir / "no/such/dir/3.deepspeed", 3);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "--save_pid: " + dir / "no/such/dir/3.deepspeed" + ": No such file or directory");
}

TEST_CASE("pid file: DeepSpeed's path") {
  CHECK(PidFile::DefaultPath() == "/tmp/" + std::to_string(::getpid()) + ".deepspeed");
}

}  // namespace
}  // namespace ds
