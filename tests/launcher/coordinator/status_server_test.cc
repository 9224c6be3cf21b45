// The job records StatusServer leaves: written 0600 through a rename, and
// pruned to the newest ones (files only; the socket side is exercised by
// tests/integration/job_watch_test.cc with real processes).
#include "launcher/coordinator/status_server.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("status records: written 0600, the oldest pruned past the limit", "[status_server]") {
  testing::TempDir tmp("records");
  Result<PrivateDir> dir = OpenPrivateDirIn(tmp.path(), "p");
  REQUIRE(dir.ok());
  for (int i = 0; i < 5; ++i) {
    REQUIRE(WritePrivateFile(*dir, "job" + std::to_string(i) + ".json", "{}\n").ok());
    struct timespec t[2] = {{1000 + i, 0}, {1000 + i, 0}};  // job4 newest
    REQUIRE(::utimensat(dir->fd.get(), ("job" + std::to_string(i) + ".json").c_str(), t, 0) == 0);
  }
  testing::WriteFile(dir->path + "/job9.sock", "");  // not a record: never pruned
  struct stat st{};
  REQUIRE(::stat((dir->path + "/job0.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  PruneRecords(*dir, 2);
  namespace fs = std::filesystem;
  CHECK(fs::exists(dir->path + "/job4.json"));
  CHECK(fs::exists(dir->path + "/job3.json"));
  CHECK_FALSE(fs::exists(dir->path + "/job2.json"));
  CHECK_FALSE(fs::exists(dir->path + "/job0.json"));
  CHECK(fs::exists(dir->path + "/job9.sock"));
  CHECK_FALSE(fs::exists(dir->path + "/job4.json.tmp"));
}

}  // namespace
}  // namespace ds
