#include "launcher/config/env_files.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("dotenv: comments, blank lines, export, quotes", "[dotenv]") {
  auto e = ParseDotEnv(
      "# a comment\n"
      "\n"
      "PLAIN=value with spaces   # trailing comment\n"
      "export EXPORTED=1\n"
      "  SINGLE='it has \"double\" and $DOLLAR'\n"
      "DOUBLE=\"tab\\tnew\\nline \\\"q\\\" \\$X\"\n"
      "EMPTY=\n"
      "HASH='a # not a comment'\n",
      ".dslaunch_env");
  REQUIRE(e.ok());
  DotEnv want = {{"PLAIN", "value with spaces"},
                 {"EXPORTED", "1"},
                 {"SINGLE", "it has \"double\" and $DOLLAR"},
                 {"DOUBLE", "tab\tnew\nline \"q\" $X"},
                 {"EMPTY", ""},
                 {"HASH", "a # not a comment"}};
  CHECK(*e == want);
}

TEST_CASE("dotenv: errors name file:line and what was expected", "[dotenv]") {
  CHECK(ParseDotEnv("A=1\nFOO\n", "env").status().message() == "env:2: expected KEY=VALUE, got 'FOO'");
  CHECK(ParseDotEnv("1X=1\n", "env").status().message() ==
        "env:1: expected a variable name before '=', got '1X'");
  CHECK(ParseDotEnv("A=\"open\n", "env").status().message() == "env:1: unterminated \" quote in the value of A");
  CHECK(ParseDotEnv("A='x' y\n", "env").status().message() ==
        "env:1: unexpected text after the quoted value of A: 'y'");
}

TEST_CASE("dotenv: dslaunch's own worker variables are refused, as in the job file's env:", "[dotenv]") {
  CHECK(ParseDotEnv("A=1\nRANK=3\n", ".dslaunch_env").status().message() ==
        ".dslaunch_env:2: RANK is set by dslaunch for every worker and cannot be overridden");
  CHECK(ParseDotEnv("export WORLD_SIZE=8\n", "/h/.dslaunch_env").status().message() ==
        "/h/.dslaunch_env:1: WORLD_SIZE is set by dslaunch for every worker and cannot be overridden");
  CHECK(ParseDotEnv("# c\nMASTER_PORT=1\n", "env").status().message() ==
        "env:2: MASTER_PORT is set by dslaunch for every worker and cannot be overridden");
  CHECK(ParseDotEnv("DSLAUNCH_JOB_ID=x\n", "env").status().message() ==
        "env:1: DSLAUNCH_JOB_ID is set by dslaunch for every worker and cannot be overridden");
  // What env: allows, a .dslaunch_env allows too.
  auto ok = ParseDotEnv("NCCL_SOCKET_IFNAME=eth1\nCUDA_VISIBLE_DEVICES=0\nOMP_NUM_THREADS=2\nDSLAUNCH_LOG=INFO\n", "env");
  REQUIRE(ok.ok());
  CHECK(ok->size() == 4);
}

TEST_CASE("dotenv: a missing file is empty", "[dotenv]") {
  auto e = LoadDotEnv("/nonexistent/.dslaunch_env");
  REQUIRE(e.ok());
  CHECK(e->empty());
}

TEST_CASE("dotenv: a NUL byte or a value over MAX_ARG_STRLEN is an error, not a truncation or E2BIG", "[dotenv]") {
  CHECK(ParseDotEnv(std::string("A=1\nB=x\0y\n", 10), "env").status().message() ==
        "env:2: the value of B contains a NUL byte at offset 1");
  CHECK(ParseDotEnv("BIG=" + std::string(131070, 'x') + "\n", "env").status().message() ==
        "env:1: BIG=... is 131075 bytes, over the kernel's limit of 131072 for one environment string "
        "(MAX_ARG_STRLEN)");
  CHECK(ParseDotEnv("BIG=" + std::string(131067, 'x') + "\n", "env").ok());  // exactly the limit
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST_CASE("deepspeed_env: the value is everything after the first '=', as DeepSpeed reads it", "[dotenv]") {
  auto e = ParseDeepSpeedEnv(
      "NCCL_DEBUG=INFO\n"
      "  SPACED = a b  \n"
      "EQ=a=b==c\n"
      "QUOTED=\"kept\" 'as' written # too\n"
      "\n"
      "# a comment DeepSpeed would choke on\n"
      "EMPTY=\n"
      "CRLF=x\r\n",
      ".deepspeed_env");
  REQUIRE(e.ok());
  DotEnv want = {{"NCCL_DEBUG", "INFO"}, {"SPACED", "a b"}, {"EQ", "a=b==c"},
                 {"QUOTED", "\"kept\" 'as' written # too"}, {"EMPTY", ""}, {"CRLF", "x"}};
  CHECK(*e == want);
}

TEST_CASE("deepspeed_env: errors name file:line", "[dotenv]") {
  CHECK(ParseDeepSpeedEnv("A=1\nexport B=2\n", "d").status().message() ==
        "d:2: expected a variable name before '=', got 'export B'");
  CHECK(ParseDeepSpeedEnv("A=1\nnothing\n", "d").status().message() == "d:2: expected KEY=VALUE, got 'nothing'");
  CHECK(ParseDeepSpeedEnv("WORLD_SIZE=2\n", "d").status().message() ==
        "d:1: WORLD_SIZE is set by dslaunch for every worker and cannot be overridden");
  CHECK(ParseDeepSpeedEnv(std::string("A=x\0y\n", 6), "d").status().message() ==
        "d:1: the value of A contains a NUL byte at offset 1");
}

}  // namespace
}  // namespace ds

#include <sys/stat.h>
#include <unistd.h>

#include "tests/test_util/files.h"
#include "tests/test_util/other_user.h"

namespace ds {
namespace {

// Issue 42 item 1: another user who can write in the working directory (a
// shared one, or /tmp) plants .dslaunch_env or .deepspeed_env with BASH_ENV,
// LD_PRELOAD or PYTHONPATH: it would run code as the job's user. Only a file
// of ours (or root's) that nobody else may change is read.
TEST_CASE("env files: a file planted by another user, a link, or one others may change is refused, naming it",
          "[dotenv][other_user]") {
  if (!testing::CanActAsNobody()) DS_SKIP(testing::kNeedsOtherUser);
  testing::SharedDir dir;
  const std::string dot = dir.shared + "/.dslaunch_env", ds_env = dir.shared + "/.deepspeed_env";
  REQUIRE(testing::WriteAsNobody(dot, "BASH_ENV=/tmp/theirs.sh\n"));
  REQUIRE(testing::WriteAsNobody(ds_env, "LD_PRELOAD=/tmp/theirs.so\n"));
  const std::string uid = std::to_string(::geteuid());
  CHECK(LoadDotEnvFiles("", dir.shared).status().message() ==
        "env file " + dot + ": is owned by uid 65534, not by you (uid " + uid + ") or root: refusing to read it");
  CHECK(LoadDeepSpeedEnvFiles("", dir.shared, "").status().message() ==
        "env file " + ds_env + ": is owned by uid 65534, not by you (uid " + uid + ") or root: refusing to read it");
  // Ours, but others (or the group) may change it.
  const std::string mine = dir.base + "/.dslaunch_env";
  testing::WriteFile(mine, "A=1\n");
  REQUIRE(::chmod(mine.c_str(), 0666) == 0);
  CHECK(LoadDotEnv(mine).status().message() ==
        "env file " + mine + ": mode 666 lets its group and others change it: refusing to read it; chmod go-w it");
  REQUIRE(::chmod(mine.c_str(), 0620) == 0);
  CHECK(LoadDotEnv(mine).status().message() ==
        "env file " + mine + ": mode 620 lets its group change it: refusing to read it; chmod go-w it");
  // A symlink (nobody's) to a file of ours is not followed.
  ::unlink(dot.c_str());
  REQUIRE(::chmod(mine.c_str(), 0644) == 0);
  REQUIRE(testing::AsNobody({"ln", "-s", mine, dot}));
  CHECK(LoadDotEnvFiles("", dir.shared).status().message() ==
        "env file " + dot + ": is a symbolic link: refusing to follow it");
  // A FIFO is refused at once, never waited on.
  ::unlink(dot.c_str());
  REQUIRE(testing::AsNobody({"mkfifo", "-m", "644", dot}));
  CHECK(LoadDotEnvFiles("", dir.shared).status().code() == Status::Code::kInvalidArgument);
  // Ours, 0644: read.
  auto ok = LoadDotEnv(mine);
  REQUIRE(ok.ok());
  CHECK(*ok == DotEnv{{"A", "1"}});
}

}  // namespace
}  // namespace ds
