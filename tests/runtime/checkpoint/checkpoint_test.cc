// Checkpoint files on their own: round trip through one rank, keep: K
// pruning, incomplete and corrupt checkpoints skipped, shape mismatches
// rejected, private modes, a symlink in the way refused. (Resharding across
// world sizes and stages: trainer_test.cc; another user's symlinks and
// directories: checkpoint_attack_test.cc.)
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "runtime/checkpoint/checkpoint.h"
#include "tests/test_util/temp_dir.h"

using ds::Status;
using namespace ds::rt;
namespace fs = std::filesystem;

using ds::testing::TempDir;

namespace {


ShardState MakeShard(size_t n, float base) {
  ShardState s;
  s.segments = {{0, 0, n / 2, 0}, {n / 2, n / 2, n - n / 2, 1}};
  s.master.resize(n);
  s.state.assign(2, std::vector<float>(n));
  for (size_t i = 0; i < n; ++i) {
    s.master[i] = base + i;
    s.state[0][i] = -float(i);
    s.state[1][i] = 0.5f * i;
  }
  return s;
}

CheckpointMeta MakeMeta(int64_t step) {
  CheckpointMeta m;
  m.step = step;
  m.applied_steps = step - 1;
  m.epoch = 1;
  m.sample_position = 24 * step;
  m.rng = {1, 2, 3, 0xffffffffffffffffULL};
  m.scaler.scale = 1024;
  m.scaler.cur_hysteresis = 2;
  m.zero_stage = 2;
  m.config_hash = "0badf00d";
  m.num_params = 10;
  m.state_slots = 2;
  return m;
}

// LoadNewestCheckpoint where the directory must be usable.
std::optional<LoadedCheckpoint> Newest(const std::string& dir, uint64_t num_params = 10,
                                       int state_slots = 2) {
  auto r = LoadNewestCheckpoint(dir, num_params, state_slots);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return std::move(r).value();
}

unsigned ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the first `from` in `path` with `to` (or the whole file after
// `keep` bytes when `from` is empty).
void Corrupt(const std::string& path, const std::string& from, const std::string& to,
             size_t keep = 0) {
  std::string text = ReadFile(path);
  if (from.empty()) {
    text.resize(keep);
  } else {
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  std::ofstream(path, std::ios::trunc) << text;
}

// Every "*.tmp" under `dir`.
std::vector<std::string> TempFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tmp") out.push_back(e.path().string());
  return out;
}

// While alive, files this process writes are limited to `bytes` (a write
// past it fails with EFBIG instead of raising SIGXFSZ).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace

TEST_CASE("checkpoint round trip and keep", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  for (int step = 1; step <= 4; ++step)
    REQUIRE(SaveCheckpoint(d.path(), MakeMeta(step), MakeShard(10, float(step)), comm, 2).ok());
  auto list = ListCheckpoints(d.path());
  REQUIRE(list.size() == 2);
  CHECK(fs::path(list[0]).filename() == "step_00000003");
  auto ck = Newest(d.path());
  REQUIRE(ck);
  CHECK(ck->meta.step == 4);
  CHECK(ck->meta.applied_steps == 3);
  CHECK(ck->meta.sample_position == 96);
  CHECK(ck->meta.rng[3] == 0xffffffffffffffffULL);
  CHECK(ck->meta.scaler.scale == 1024);
  CHECK(ck->meta.world_size == 1);
  CHECK(ck->master[9] == 4 + 9);
  CHECK(ck->state[0][9] == -9);
  CHECK(ck->state[1][8] == 4);

  SECTION("a corrupt newest checkpoint is skipped") {
    std::fstream f(list[1] + "/shard_0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x01');
    f.close();
    auto older = Newest(d.path());
    REQUIRE(older);
    CHECK(older->meta.step == 3);
  }
  SECTION("a checkpoint without manifest is incomplete") {
    fs::remove(list[1] + "/manifest.json");
    CHECK(ListCheckpoints(d.path()).size() == 1);
    CHECK(Newest(d.path())->meta.step == 3);
  }
  SECTION("another model or optimizer does not load") {
    CHECK_FALSE(Newest(d.path(), 11, 2));
    CHECK_FALSE(Newest(d.path(), 10, 1));
  }
}

TEST_CASE("no checkpoint directory means a fresh start", "[checkpoint]") {
  CHECK_FALSE(Newest("/nonexistent/dstrain"));
  CHECK(ListCheckpoints("/nonexistent/dstrain").empty());
}

TEST_CASE("checkpoint directories are private, files 0640", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  const std::string dir = d.path() + "/a/ckpt";
  REQUIRE(SaveCheckpoint(dir, MakeMeta(1), MakeShard(10, 1), comm, 2).ok());
  CHECK(ModeOf(dir) == 0700);
  CHECK(ModeOf(dir + "/step_00000001") == 0700);
  // At most 0640: the process's umask may take more away.
  CHECK((ModeOf(dir + "/step_00000001/shard_0.bin") & ~0640u) == 0);
  CHECK((ModeOf(dir + "/step_00000001/manifest.json") & ~0640u) == 0);
}

TEST_CASE("a symlink at a checkpoint's temporary name is not written through", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  const std::string dir = d.path() + "/ckpt", victim = d.path() + "/victim";
  { std::ofstream(victim) << "precious"; }
  REQUIRE(fs::create_directories(dir + "/step_00000001"));
  SECTION("the shard") {
    REQUIRE(::symlink(victim.c_str(), (dir + "/step_00000001/shard_0.bin.tmp").c_str()) == 0);
    Status st = SaveCheckpoint(dir, MakeMeta(1), MakeShard(10, 1), comm, 2);
    CHECK(st.message() ==
          dir + "/step_00000001/shard_0.bin.tmp is a symbolic link: refusing to write through it");
  }
  SECTION("the manifest") {
    REQUIRE(::symlink(victim.c_str(), (dir + "/step_00000001/manifest.json.tmp").c_str()) == 0);
    Status st = SaveCheckpoint(dir, MakeMeta(1), MakeShard(10, 1), comm, 2);
    CHECK(st.message() == dir +
                              "/step_00000001/manifest.json.tmp is a symbolic link: refusing to "
                              "write through it");
  }
  CHECK(ReadFile(victim) == "precious");
  CHECK(ListCheckpoints(dir).empty());
}

TEST_CASE("a stale temporary file of ours is replaced", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  const std::string dir = d.path() + "/ckpt";
  REQUIRE(fs::create_directories(dir + "/step_00000001"));
  { std::ofstream(dir + "/step_00000001/shard_0.bin.tmp") << "half a shard"; }
  REQUIRE(SaveCheckpoint(dir, MakeMeta(1), MakeShard(10, 1), comm, 2).ok());
  CHECK_FALSE(fs::exists(dir + "/step_00000001/shard_0.bin.tmp"));
  CHECK(Newest(dir)->meta.step == 1);
}

TEST_CASE("a corrupt manifest is skipped and the older checkpoint loads", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  for (int step = 1; step <= 2; ++step)
    REQUIRE(SaveCheckpoint(d.path(), MakeMeta(step), MakeShard(10, float(step)), comm, 2).ok());
  const std::string manifest = d.path() + "/step_00000002/manifest.json";
  SECTION("a string where a number belongs") { Corrupt(manifest, "\"step\": 2", "\"step\": \"two\""); }
  SECTION("a string in a shard's entry") { Corrupt(manifest, "\"bytes\": ", "\"bytes\": \"x\", \"b\": "); }
  SECTION("a missing key") { Corrupt(manifest, "  \"epoch\": 1,\n", ""); }
  SECTION("a shard's missing key") { Corrupt(manifest, "\"crc32\"", "\"crc\""); }
  SECTION("truncated") { Corrupt(manifest, "", "", ReadFile(manifest).size() / 2); }
  auto ck = Newest(d.path());
  REQUIRE(ck);
  CHECK(ck->meta.step == 1);
  CHECK(ck->master[9] == 1 + 9);
}

TEST_CASE("a failed write leaves no temporary file", "[checkpoint]") {
  TempDir d;
  LocalCommunicator comm;
  REQUIRE(SaveCheckpoint(d.path(), MakeMeta(1), MakeShard(10, 1), comm, 2).ok());
  const size_t shard_bytes = fs::file_size(d.path() + "/step_00000001/shard_0.bin");
  const size_t manifest_bytes = fs::file_size(d.path() + "/step_00000001/manifest.json");
  REQUIRE(shard_bytes < manifest_bytes);
  Status st;
  SECTION("the shard") {
    FileSizeLimit limit(shard_bytes / 2);
    st = SaveCheckpoint(d.path(), MakeMeta(2), MakeShard(10, 2), comm, 2);
    CHECK(st.message() ==
          d.path() + "/step_00000002/shard_0.bin.tmp: write: File too large");
  }
  SECTION("the manifest") {
    FileSizeLimit limit(shard_bytes);
    st = SaveCheckpoint(d.path(), MakeMeta(2), MakeShard(10, 2), comm, 2);
    CHECK(st.message() ==
          d.path() + "/step_00000002/manifest.json.tmp: write: File too large");
  }
  CHECK(st.code() == Status::Code::kIOError);
  CHECK(TempFiles(d.path()).empty());
  CHECK(ListCheckpoints(d.path()).size() == 1);
  CHECK(Newest(d.path())->meta.step == 1);
}
