// wire/attach_file.cc: what `dslaunch attach` reads to find a job, written
// by agents and the leader; the private directory's own rules are
// tests/common/private_dir_test.cc's.
#include "wire/attach_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "wire/wire_format.h"

namespace ds {
namespace {

const std::string kKey(64, 'a');

PrivateDir Open(const testing::TempDir& t) {
  auto d = OpenPrivateDirIn(t.path(), "priv");
  REQUIRE(d.ok());
  return std::move(d).value();
}

TEST_CASE("attach file: written 0600, found again by job, the leader's and each node's", "[attach]") {
  testing::TempDir t;
  PrivateDir dir = Open(t);
  REQUIRE(WriteAttachFile(dir, {"job1", 2, kKey, {"10.0.0.1:4000", "10.0.0.2:4001"}}).ok());
  REQUIRE(WriteAttachFile(dir, {"job1", wire::kAttachLeaderNode, kKey, {"10.0.0.1:4000"}}).ok());
  REQUIRE(WriteAttachFile(dir, {"other", 0, kKey, {"h:1"}}).ok());
  struct stat st;
  REQUIRE(::stat((dir.path + "/job1.attach.2").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(testing::ReadFile(dir.path + "/job1.attach.leader") ==
        "job job1\nnode leader\nkey " + kKey + "\ncoordinator 10.0.0.1:4000\n");

  std::vector<std::string> skipped;
  std::vector<AttachFile> mine = FindAttachFiles(dir, "job1", &skipped);
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].node == 2);
  CHECK(mine[0].coordinators == std::vector<std::string>{"10.0.0.1:4000", "10.0.0.2:4001"});
  CHECK(mine[1].node == wire::kAttachLeaderNode);
  CHECK(FindAttachFiles(dir, "", &skipped).size() == 3);
  CHECK(skipped.empty());
  RemoveAttachFile(dir, "job1", 2);
  CHECK(FindAttachFiles(dir, "job1", &skipped).size() == 1);
}

TEST_CASE("attach file: a bad line is named; a file whose name lies is skipped, said why", "[attach]") {
  CHECK(ParseAttachFile("job j\nnode x\nkey " + kKey + "\ncoordinator h:1\n", "f").status().message() ==
        "f:2: expected 'node N' or 'node leader', got 'node x'");
  CHECK(ParseAttachFile("job j\nnode 1\nkey abc\n", "f").status().message() ==
        "f:3: expected 'key' and 64 hex digits, got 'key abc'");
  CHECK(ParseAttachFile("job j\nnode 1\nkey " + kKey + "\n", "f").status().message() ==
        "f: expected job, node, key and at least one coordinator");
  CHECK(ParseAttachFile("job ../x\n", "f").status().message() ==
        "f:1: expected 'job ID' (1-64 of [0-9A-Za-z_-]), got 'job ../x'");
  CHECK(ParseAttachFile("run rm -rf /\n", "f").status().message() ==
        "f:1: expected job, node, key or coordinator, got 'run rm -rf /'");
  CHECK_FALSE(WriteAttachFile(PrivateDir{}, {"../../etc/x", 0, kKey, {"h:1"}}).ok());

  testing::TempDir t;
  PrivateDir dir = Open(t);
  testing::WriteFile(dir.path + "/j.attach.3", "job j\nnode 4\nkey " + kKey + "\ncoordinator h:1\n");
  testing::WriteFile(dir.path + "/j.attach.5", "garbage\n");
  REQUIRE(::symlink("/etc/passwd", (dir.path + "/j.attach.6").c_str()) == 0);
  std::vector<std::string> skipped;
  CHECK(FindAttachFiles(dir, "j", &skipped).empty());
  REQUIRE(skipped.size() == 3);
  CHECK(skipped[0] == dir.path + "/j.attach.3: names job j node 4 inside");
  CHECK(skipped[1] == dir.path + "/j.attach.5:1: expected job, node, key or coordinator, got 'garbage'");
  CHECK(skipped[2].find("j.attach.6: ") != std::string::npos);  // a symlink is not followed
}

}  // namespace
}  // namespace ds
