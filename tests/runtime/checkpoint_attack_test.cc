// Another local user against dstrain's checkpoints, for real: as root, with
// the other user's moves made by `setpriv` as nobody:nogroup in a 0777
// directory (runtime/checkpoint_files.h). A symlink planted at a temporary
// name is never written through, and checkpoint or step directories of
// another user are refused for save and never loaded. Needs root (to be
// the victim and to become nobody); without it every case passes with a
// warning.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "runtime/checkpoint.h"

using ds::Status;
using namespace ds::rt;
namespace fs = std::filesystem;

namespace {

constexpr uid_t kNobody = 65534;

bool NotRoot() {
  if (::geteuid() == 0) return false;
  WARN("not root: the attack by another user (nobody) cannot be staged; skipped");
  return true;
}

// <base> (0755, ours) holding `victim` (a root file nobody may not write)
// and `shared`, a 0777 directory everyone can write to.
struct SharedDir {
  SharedDir() {
    char t[] = "/tmp/dstrain-attack-XXXXXX";
    base = mkdtemp(t);
    ::chmod(base.c_str(), 0755);
    shared = base + "/shared";
    victim = base + "/victim";
    fs::create_directory(shared);
    ::chmod(shared.c_str(), 0777);  // not 1777: anyone may add, rename or remove entries
    std::ofstream(victim) << "precious";
  }
  ~SharedDir() { fs::remove_all(base); }
  std::string base, shared, victim;
};

// Runs argv as nobody:nogroup without supplementary groups; true on exit 0.
bool AsNobody(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"});
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

uid_t OwnerOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_uid;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ShardState MakeShard() {
  ShardState s;
  s.segments = {{0, 0, 10, 0}};
  s.master.assign(10, 1.5f);
  s.state.assign(2, std::vector<float>(10, 0.25f));
  return s;
}

CheckpointMeta MakeMeta(int64_t step) {
  CheckpointMeta m;
  m.step = step;
  m.scaler.scale = 1;
  m.num_params = 10;
  m.state_slots = 2;
  return m;
}

Status Save(const std::string& dir, int64_t step) {
  LocalCommunicator comm;
  return SaveCheckpoint(dir, MakeMeta(step), MakeShard(), comm, 5);
}

}  // namespace

TEST_CASE("attack: nobody's step directory with a symlink at the shard's temporary name",
          "[checkpoint][attack]") {
  if (NotRoot()) return;
  SharedDir d;
  const std::string step = d.shared + "/step_00000001";
  REQUIRE(AsNobody({"mkdir", step}));
  REQUIRE(AsNobody({"ln", "-s", d.victim, step + "/shard_0.bin.tmp"}));
  REQUIRE(OwnerOf(step + "/shard_0.bin.tmp") == kNobody);

  Status st = Save(d.shared, 1);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == "checkpoint step directory " + step +
                            " is owned by uid 65534, not by this user (uid 0): refusing to use it");
  CHECK(ReadFile(d.victim) == "precious");
}

TEST_CASE("attack: a symlink planted by nobody in our world-writable step directory",
          "[checkpoint][attack]") {
  if (NotRoot()) return;
  SharedDir d;
  const std::string step = d.shared + "/step_00000001";
  fs::create_directory(step);
  ::chmod(step.c_str(), 0777);  // ours, but anyone may add entries (made under umask 0)
  std::string planted;
  SECTION("at the shard's temporary name") { planted = step + "/shard_0.bin.tmp"; }
  SECTION("at the manifest's temporary name") { planted = step + "/manifest.json.tmp"; }
  REQUIRE(AsNobody({"ln", "-s", d.victim, planted}));
  REQUIRE(OwnerOf(planted) == kNobody);

  Status st = Save(d.shared, 1);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == planted + " is a symbolic link: refusing to write through it");
  CHECK(ReadFile(d.victim) == "precious");
  CHECK(fs::is_symlink(planted));  // left for a person to look at
}

TEST_CASE("attack: a checkpoint directory of nobody is refused for save and load",
          "[checkpoint][attack]") {
  if (NotRoot()) return;
  SharedDir d;
  // A genuine checkpoint of ours, copied into the directory nobody made, as
  // if nobody had crafted it.
  const std::string good = d.base + "/good", theirs = d.shared + "/ckpt";
  REQUIRE(Save(good, 1).ok());
  REQUIRE(AsNobody({"mkdir", theirs}));
  fs::copy(good, theirs, fs::copy_options::recursive);
  const std::string refusal = "checkpoint directory " + theirs +
                              " is owned by uid 65534, not by this user (uid 0): refusing to use it";

  auto loaded = LoadNewestCheckpoint(theirs, 10, 2);
  CHECK(loaded.status().code() == Status::Code::kPermissionDenied);
  CHECK(loaded.status().message() == refusal);

  Status st = Save(theirs, 2);
  CHECK(st.code() == Status::Code::kPermissionDenied);
  CHECK(st.message() == refusal);
  CHECK_FALSE(fs::exists(theirs + "/step_00000002"));
}

TEST_CASE("attack: a step directory of nobody in our checkpoint directory is never loaded",
          "[checkpoint][attack]") {
  if (NotRoot()) return;
  SharedDir d;
  REQUIRE(Save(d.shared, 1).ok());  // the shared directory is ours: accepted
  const std::string planted = d.shared + "/step_00000002";
  REQUIRE(AsNobody({"mkdir", planted}));
  for (const char* f : {"shard_0.bin", "manifest.json"})
    fs::copy_file(d.shared + "/step_00000001/" + f, planted + "/" + f);

  CHECK(ListCheckpoints(d.shared) == std::vector<std::string>{d.shared + "/step_00000001"});
  auto loaded = LoadNewestCheckpoint(d.shared, 10, 2);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->path == d.shared + "/step_00000001");
  CHECK(OwnerOf(planted) == kNobody);  // skipped, not removed
}
