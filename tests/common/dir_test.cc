// Dir (common/dir.h): a directory opened once, checked (not a symlink, ours)
// and then used through its descriptor: it keeps meaning that directory when
// its path is swapped, and no symlink in it is followed for a read, a write
// or a removal. Errors name the path and what was expected, word for word.
#include "common/dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string Expected() { return "; expected a directory owned by uid " + std::to_string(::geteuid()); }

TEST_CASE("Dir: a symlink, a file, another user's directory or nothing is refused, naming it", "[unit]") {
  TempDir tmp("dsl-test-dir");
  fs::create_directory(tmp / "real");
  fs::create_directory_symlink(tmp / "real", tmp / "link");
  WriteFile(tmp / "file", "x");
  REQUIRE(Dir::Open(tmp / "real", "test directory").ok());

  auto link = Dir::Open(tmp / "link", "test directory");
  CHECK(link.status().code() == Status::Code::kPermissionDenied);
  CHECK(link.status().message() == "test directory " + (tmp / "link") + " is a symlink" + Expected());
  // A trailing "/" or "/." would make the kernel follow it: still the symlink that is judged.
  CHECK(Dir::Open(tmp / "link/", "d").status().message() == "d " + (tmp / "link") + " is a symlink" + Expected());
  CHECK(Dir::Open(tmp / "link/.", "d").status().message() == "d " + (tmp / "link") + " is a symlink" + Expected());
  CHECK(Dir::Open(tmp / "file", "d").status().message() == "d " + (tmp / "file") + " is not a directory" + Expected());
  auto none = Dir::Open(tmp / "none", "test directory");
  CHECK(none.status().code() == Status::Code::kNotFound);
  CHECK(none.status().message() == "test directory " + (tmp / "none") + " does not exist");

  auto parent = Dir::Open(tmp.path(), "d");
  REQUIRE(parent.ok());
  CHECK(parent->OpenDir("link", "step").status().message() == "step " + (tmp / "link") + " is a symlink" + Expected());
  CHECK(parent->MakeDir("link", "step", 0700).status().code() == Status::Code::kPermissionDenied);
  CHECK(parent->OpenDir("../x", "step").status().code() == Status::Code::kInvalidArgument);
  if (::geteuid() == 0) {  // another user's directory, and file: not used
    REQUIRE(::chown((tmp / "real").c_str(), 65534, 65534) == 0);
    CHECK(parent->OpenDir("real", "step").status().message() == "step " + (tmp / "real") + " is owned by uid 65534" +
                                                                    Expected());
    REQUIRE(::chown((tmp / "file").c_str(), 65534, 65534) == 0);
    CHECK(parent->ReadFile("file").status().message() ==
          (tmp / "file") + " is owned by uid 65534; expected a file owned by uid 0");
  }
}

TEST_CASE("Dir: Make creates the directory with its mode and its missing parents", "[unit]") {
  TempDir tmp("dsl-test-dir");
  auto made = Dir::Make(tmp / "a/b/c", "d", 0700);
  REQUIRE(made.ok());
  CHECK(made->path() == tmp / "a/b/c");
  struct stat st;
  REQUIRE(::stat((tmp / "a/b/c").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(Dir::Make(tmp / "a/b/c", "d", 0700).ok());  // there already: opened
  fs::create_directory_symlink(tmp / "a", tmp / "l");
  CHECK(Dir::Make(tmp / "l", "d", 0700).status().code() == Status::Code::kPermissionDenied);
}

TEST_CASE("Dir: keeps meaning the directory it opened when its path is swapped", "[unit]") {
  TempDir tmp("dsl-test-dir");
  auto dir = Dir::Make(tmp / "ckpt", "d", 0700);
  REQUIRE(dir.ok());
  fs::rename(tmp / "ckpt", tmp / "moved");
  fs::create_directory(tmp / "elsewhere");
  fs::create_directory_symlink(tmp / "elsewhere", tmp / "ckpt");
  REQUIRE(dir->WriteFile("manifest.json", "{}", 0640).ok());
  REQUIRE(dir->MakeDir("step_1", "step", 0700).ok());
  CHECK(ReadFile(tmp / "moved/manifest.json") == "{}");
  CHECK(fs::is_directory(tmp / "moved/step_1"));
  CHECK(fs::is_empty(tmp / "elsewhere"));
  REQUIRE(dir->RemoveTree("step_1").ok());
  CHECK_FALSE(fs::exists(tmp / "moved/step_1"));
}

TEST_CASE("Dir: no symlink inside is followed to read, write or remove", "[unit]") {
  TempDir tmp("dsl-test-dir");
  fs::create_directories(tmp / "outside/deep");
  WriteFile(tmp / "outside/deep/precious", "precious");
  auto dir = Dir::Make(tmp / "ckpt", "d", 0700);
  REQUIRE(dir.ok());
  fs::create_symlink(tmp / "outside/deep/precious", tmp / "ckpt/manifest.json");
  fs::create_symlink(tmp / "outside/deep/precious", tmp / "ckpt/shard.bin.tmp");
  fs::create_directories(tmp / "ckpt/step_1");
  fs::create_directory_symlink(tmp / "outside", tmp / "ckpt/step_1/into");

  auto read = dir->ReadFile("manifest.json");
  CHECK(read.status().code() == Status::Code::kIOError);
  CHECK(read.status().message() == (tmp / "ckpt/manifest.json") + " is a symlink");
  CHECK(dir->ReadFile("none").status().message() == (tmp / "ckpt/none") + ": missing");
  Status st = dir->WriteFile("shard.bin", "bytes", 0640);
  CHECK(st.message() == (tmp / "ckpt/shard.bin.tmp") + " is a symbolic link: refusing to write through it");

  REQUIRE(dir->RemoveTree("step_1").ok());
  REQUIRE(dir->RemoveContents().ok());
  CHECK(fs::is_empty(tmp / "ckpt"));
  CHECK(ReadFile(tmp / "outside/deep/precious") == "precious");
}

TEST_CASE("Dir: lists its entries sorted and moves files between directories", "[unit]") {
  TempDir tmp("dsl-test-dir");
  auto a = Dir::Make(tmp / "a", "d", 0700);
  auto b = Dir::Make(tmp / "b", "d", 0700);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (const char* f : {"z", "m", "a"}) REQUIRE(a->WriteFile(f, f, 0640).ok());
  CHECK(*a->List() == std::vector<std::string>{"a", "m", "z"});
  REQUIRE(b->MoveFrom(*a, "m", "moved").ok());
  CHECK(ReadFile(tmp / "b/moved") == "m");
  CHECK_FALSE(a->Lstat("m"));
  REQUIRE(a->Lstat("z"));
  CHECK(S_ISREG(a->Lstat("z")->st_mode));
  REQUIRE(a->Unlink("z").ok());
  CHECK(a->Unlink("z").ok());  // absent: nothing to do
  CHECK(*a->List() == std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace ds
