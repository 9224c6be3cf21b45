// ReadPrivateLine: how secrets are read from files (the agent's --secret-file,
// the per-node form's DSLAUNCH_SECRET_FILE).
#include "common/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

TEST_CASE("ReadPrivateLine: the first line of a 0600 file of ours, trimmed", "[unit]") {
  testing::TempDir tmp("dsl-test-private");
  const std::string f = tmp.path() + "/s";
  testing::WriteFile(f, "  the-secret \nsecond line\n");
  REQUIRE(::chmod(f.c_str(), 0600) == 0);
  CHECK(*ReadPrivateLine(f, "S=" + f) == "the-secret");
  testing::WriteFile(f, "no newline");
  CHECK(*ReadPrivateLine(f, "S=" + f) == "no newline");
}

TEST_CASE("ReadPrivateLine: others' permissions, another owner, no file, not a file", "[unit]") {
  testing::TempDir tmp("dsl-test-private");
  const std::string f = tmp.path() + "/s";
  testing::WriteFile(f, "the-secret\n");
  REQUIRE(::chmod(f.c_str(), 0640) == 0);
  auto r = ReadPrivateLine(f, "S=" + f);
  CHECK(r.status().code() == Status::Code::kPermissionDenied);
  CHECK(r.status().message() == "S=" + f + ": mode 640 lets others read or change it; chmod 600 it");

  REQUIRE(::chmod(f.c_str(), 0600) == 0);
  if (::geteuid() == 0 && ::chown(f.c_str(), 65534, 65534) == 0)
    CHECK(ReadPrivateLine(f, "S=" + f).status().message() == "S=" + f + ": owned by uid 65534, not by you");

  CHECK(ReadPrivateLine(tmp.path() + "/none", "S").status().message() == "S: not a readable file");
  CHECK(ReadPrivateLine(tmp.path(), "S").status().message() == "S: not a readable file");
  // A FIFO nobody writes to: refused at once, not waited on.
  const std::string fifo = tmp.path() + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ReadPrivateLine(fifo, "S").status().code() == Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ds
