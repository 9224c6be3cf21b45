// OpenPrivateDir's rules against a real other user (nobody, via setpriv) who
// plants the name first in a shared sticky directory, as /tmp is.
#include "common/private_dir.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/test_util/other_user.h"
#include "tests/test_util/temp_dir.h"

namespace ds {
namespace {

struct SharedTmp {
  SharedTmp() : base(tmp.path() + "/tmp") {
    ::chmod(tmp.path().c_str(), 0755);
    ::mkdir(base.c_str(), 01777);
    ::chmod(base.c_str(), 01777);
  }
  testing::TempDir tmp{"dsl-test-privdir"};
  std::string base;
};

TEST_CASE("private dir: made 0700 when missing, used again when it is ours", "[unit]") {
  SharedTmp t;
  auto d = OpenPrivateDirIn(t.base, "dslaunch-0");
  REQUIRE(d.ok());
  struct stat st;
  REQUIRE(::fstat(d->fd.get(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(st.st_uid == ::geteuid());
  CHECK(OpenPrivateDirIn(t.base, "dslaunch-0").ok());
}

TEST_CASE("private dir: another user's directory, a symlink or loose permissions are refused", "[unit]") {
  SharedTmp t;
  REQUIRE(testing::AsNobody({"mkdir", "-m", "700", t.base + "/theirs"}));
  CHECK(OpenPrivateDirIn(t.base, "theirs").status().message() ==
        t.base + "/theirs is owned by uid 65534, not by you (uid " + std::to_string(::geteuid()) +
            "): another user made it; remove it");
  // A symlink to a directory of ours, planted by them: never followed.
  REQUIRE(::mkdir((t.tmp.path() + "/ours").c_str(), 0700) == 0);
  REQUIRE(testing::AsNobody({"ln", "-s", t.tmp.path() + "/ours", t.base + "/link"}));
  auto link = OpenPrivateDirIn(t.base, "link");
  CHECK(link.status().code() == Status::Code::kPermissionDenied);
  CHECK(link.status().message() ==
        t.base + "/link is a symbolic link: expected a directory of yours; remove it");
  REQUIRE(::mkdir((t.base + "/loose").c_str(), 0755) == 0);
  ::chmod((t.base + "/loose").c_str(), 0755);
  CHECK(OpenPrivateDirIn(t.base, "loose").status().message() ==
        t.base + "/loose has mode 755: expected 700 (nobody else may enter it); chmod 700 it");
  REQUIRE(testing::AsNobody({"touch", t.base + "/file"}));
  CHECK(OpenPrivateDirIn(t.base, "file").status().message() == t.base + "/file is not a directory; remove it");
}

// Issue 42 item 9: anyone can make /tmp/dslaunch-<uid> for every uid first.
// A user without XDG_RUNTIME_DIR (root over ssh, containers, sudo) then lost
// the per-node form on loopback and `status`/`report`, and one who is not
// root got only "Permission denied". Now who made it is said to anyone, and
// dslaunch uses $HOME/.dslaunch instead (/run/user/<uid> first, where ours).
TEST_CASE("private dir: a name another user made first in /tmp: who made it is said, to a user who is not root "
          "too, and $HOME/.dslaunch is used instead; /run/user/<uid> first",
          "[unit][other_user]") {
  if (!testing::CanActAsNobody()) DS_SKIP(testing::kNeedsOtherUser);
  SharedTmp t;
  const std::string name = "dslaunch-" + std::to_string(::geteuid()), planted = t.base + "/" + name;
  REQUIRE(testing::AsNobody({"mkdir", "-m", "700", planted}));
  testing::TempDir home("dsl-test-home");
  PrivateDirBases b;
  b.tmp = t.base;
  b.home = home.path();
  b.run_user = home.path() + "/no-run-user";
  auto d = OpenPrivateDirFrom(b);
  REQUIRE(d.ok());
  CHECK(d->path == home.path() + "/.dslaunch");
  b.home = "";
  CHECK(OpenPrivateDirFrom(b).status().message() == planted + " is owned by uid 65534, not by you (uid " +
                                                        std::to_string(::geteuid()) + "): another user made it; remove it");
  b.run_user = home.path() + "/run";
  REQUIRE(::mkdir(b.run_user.c_str(), 0700) == 0);
  d = OpenPrivateDirFrom(b);
  REQUIRE(d.ok());
  CHECK(d->path == b.run_user + "/dslaunch");
  // A victim who is not root (uid 65533) cannot open nobody's 0700
  // directory: it is told who made it all the same.
  REQUIRE(testing::AsNobody({"mkdir", "-m", "700", t.base + "/dslaunch-65533"}));
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65533, 65533, 65533) != 0 || ::setresuid(65533, 65533, 65533) != 0)
      ::_exit(2);
    auto r = OpenPrivateDirIn(t.base, "dslaunch-65533");
    ::_exit(r.status().message() ==
                    t.base + "/dslaunch-65533 is owned by uid 65534, not by you (uid 65533): another user made it; remove it"
                ? 0
                : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace ds
