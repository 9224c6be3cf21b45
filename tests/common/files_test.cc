// ReadPrivateLine: how secrets are read from files (the agent's --secret-file,
// the per-node form's DSLAUNCH_SECRET_FILE).
#include "common/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/other_user.h"
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

TEST_CASE("ReadTextFile: a file or pipe past the cap is refused without reading it whole", "[unit]") {
  testing::TempDir tmp("dsl-test-text");
  const std::string big = tmp.path() + "/job.yaml";
  testing::WriteFile(big, "");
  REQUIRE(::truncate(big.c_str(), off_t{1} << 30) == 0);  // 1 GiB, sparse: refused by its size
  CHECK(ReadTextFile(big, "job file").status().message() ==
        "job file " + big + ": is larger than 16 MiB, the most a job file may be");
  // A pipe has no size: counted as it is read.
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string chunk(40000, 'x');
  REQUIRE(::write(fds[1], chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size()));
  ::close(fds[1]);
  const std::string pipe_path = "/proc/self/fd/" + std::to_string(fds[0]);
  CHECK(ReadTextFile(pipe_path, "hostfile", 32u << 10).status().code() == Status::Code::kInvalidArgument);
  ::close(fds[0]);
  testing::WriteFile(big, "small\n");
  CHECK(*ReadTextFile(big, "job file") == "small\n");
  CHECK(ReadTextFile(tmp.path(), "job file").status().message() == "job file " + tmp.path() + ": is a directory");
}

// Issue 42 item 7: a job file or hostfile that is a FIFO nobody writes to
// blocked dslaunch in open() forever, silently.
TEST_CASE("ReadTextFile: a named FIFO is refused at once; the pipe of <(...) is still read", "[unit]") {
  testing::TempDir tmp("dsl-test-text");
  const std::string fifo = tmp.path() + "/hostfile";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(ReadTextFile(fifo, "hostfile").status().message() ==
        "hostfile " + fifo + ": is a named pipe (FIFO): refusing to wait for a writer; give a regular file");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "a slots=1\n", 10) == 10);
  ::close(fds[1]);
  CHECK(*ReadTextFile("/dev/fd/" + std::to_string(fds[0]), "hostfile") == "a slots=1\n");
  ::close(fds[0]);
}

// mpirun's token path exists on the launcher's node only; on another node
// another user may plant it first: a directory of theirs holding a symlink
// to a 0600 file of ours, whose first line would be taken as the key.
TEST_CASE("ReadPrivateLine: a token planted by another user is refused, never followed", "[unit]") {
  testing::TempDir tmp("dsl-test-private");
  ::chmod(tmp.path().c_str(), 0755);
  const std::string shared = tmp.path() + "/shared", victim = tmp.path() + "/victim";
  REQUIRE(::mkdir(shared.c_str(), 01777) == 0);
  ::chmod(shared.c_str(), 01777);
  testing::WriteFile(victim, "not-the-token\n");
  REQUIRE(::chmod(victim.c_str(), 0600) == 0);
  const std::string planted_dir = shared + "/dslaunch-mpirun.1.abc", token = planted_dir + "/token";
  REQUIRE(testing::AsNobody({"mkdir", "-m", "755", planted_dir}));
  REQUIRE(testing::AsNobody({"ln", "-s", victim, token}));
  auto r = ReadPrivateLine(token, "T", SecretDir::kPrivate);
  CHECK(r.status().code() == Status::Code::kPermissionDenied);
  CHECK(r.status().message() == "T: its directory " + planted_dir +
                                    " has owner uid 65534 and mode 755; expected a directory of yours with mode 700");
  // In a directory of ours the link is still not followed.
  const std::string mine = tmp.path() + "/mine";
  REQUIRE(::mkdir(mine.c_str(), 0700) == 0);
  REQUIRE(::symlink(victim.c_str(), (mine + "/token").c_str()) == 0);
  CHECK(ReadPrivateLine(mine + "/token", "T", SecretDir::kPrivate).status().message() ==
        "T: is a symbolic link: refusing to follow it");
  CHECK(ReadPrivateLine(mine + "/token", "T").status().message() == "T: is a symbolic link: refusing to follow it");
  testing::WriteFile(mine + "/real", "the-token\n");
  REQUIRE(::chmod((mine + "/real").c_str(), 0600) == 0);
  CHECK(*ReadPrivateLine(mine + "/real", "T", SecretDir::kPrivate) == "the-token");
}

}  // namespace
}  // namespace ds
