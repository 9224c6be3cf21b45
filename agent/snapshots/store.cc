#include "agent/snapshots/store.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "checkpoint_format/checkpoint_format.h"
#include "common/env_registry.h"
#include "common/process_dirs.h"
#include "wire/hmac_auth.h"
#include "wire/snapshot_handoff.h"

namespace ds {
namespace fs = std::filesystem;

namespace {
constexpr const char* kWhat = "snapshot memory directory";
std::string ShardFileName(uint32_t shard) { return fmt::format("shard_{}.bin", shard); }

std::string GiB(uint64_t bytes) { return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30)); }

// /proc/meminfo's MemAvailable in bytes; no bound when it cannot be read.
uint64_t MemAvailable() {
  FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return std::numeric_limits<uint64_t>::max();
  char line[256];
  unsigned long long kib = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof(line), f) != nullptr)
    found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
  std::fclose(f);
  return found ? kib * 1024 : std::numeric_limits<uint64_t>::max();
}

// What a new file on the filesystem of `fd` may grow to: the space free
// there, and on tmpfs (which is memory) no more than the memory available.
Result<uint64_t> RoomFor(int fd, const std::string& where) {
  struct statvfs vfs {};
  struct statfs fs {};
  if (::fstatvfs(fd, &vfs) != 0 || ::fstatfs(fd, &fs) != 0)
    return Status::IOError(fmt::format("{}: statfs: {}", where, std::strerror(errno)));
  uint64_t room = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (fs.f_type == TMPFS_MAGIC) room = std::min(room, MemAvailable());
  return room;
}

}  // namespace

// A shard arriving from a peer: a file in receiving/ that only Commit() moves
// to its step directory; removed when dropped before.
class SnapshotStore::Receiving final : public ShardSink {
 public:
  Receiving(SnapshotStore* store, HeldShard held, std::string manifest, std::string name, UniqueFd fd)
      : store_(store), held_(held), manifest_(std::move(manifest)), name_(std::move(name)), fd_(std::move(fd)) {}
  ~Receiving() override {
    if (!committed_) (void)store_->receiving_.Unlink(name_);
  }

  Status Write(const uint8_t* data, size_t n) override {
    if (n > held_.entry.bytes - written_)
      return Status::InvalidArgument(fmt::format("{}: more bytes than the {} announced", path(), held_.entry.bytes));
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::write(fd_.get(), data + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Status::IOError(fmt::format("{}: {}", path(), std::strerror(errno)));
      done += static_cast<size_t>(w);
    }
    written_ += n;
    return Status::OK();
  }

  Status Commit() override {
    if (written_ != held_.entry.bytes)
      return Status::InvalidArgument(
          fmt::format("{}: {} bytes received, {} announced", path(), written_, held_.entry.bytes));
    if (::fsync(fd_.get()) != 0) return Status::IOError(fmt::format("{}: fsync: {}", path(), std::strerror(errno)));
    fd_.Reset();
    DS_RETURN_IF_ERROR(store_->Keep(name_, held_, manifest_));
    committed_ = true;
    return Status::OK();
  }

 private:
  std::string path() const { return store_->receiving_.PathOf(name_); }
  SnapshotStore* store_;
  HeldShard held_;
  std::string manifest_;
  std::string name_;
  UniqueFd fd_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

Result<ShardFile> OpenShardFile(const Dir& dir, const std::string& name, const HeldShard& held,
                                std::string manifest) {
  DS_ASSIGN_OR_RETURN(UniqueFd fd, dir.OpenFile(name));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return Status::IOError(fmt::format("{}: {}", dir.PathOf(name), std::strerror(errno)));
  if (static_cast<uint64_t>(st.st_size) != held.entry.bytes)
    return Status::InvalidArgument(
        fmt::format("{}: not a regular file of {} bytes", dir.PathOf(name), held.entry.bytes));
  return ShardFile{held, std::move(manifest), std::move(fd)};
}

Result<ShardCopy> ReadVerified(const ShardFile& f) {
  ShardCopy c{f.held, f.manifest, std::string(f.held.entry.bytes, '\0')};
  size_t done = 0;
  while (done < c.data.size()) {
    ssize_t n = ::pread(f.fd.get(), c.data.data() + done, c.data.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IOError(fmt::format("reading shard {} of step {}: {}", f.held.entry.shard,
                                                   f.held.entry.step, n < 0 ? std::strerror(errno) : "ended early"));
    done += static_cast<size_t>(n);
  }
  if (ckpt::Crc32(c.data) != f.held.crc32)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: crc32 mismatch (corrupt)", f.held.entry.shard,
                                               f.held.entry.step));
  DS_RETURN_IF_ERROR(CheckManifest(f.held, f.manifest));
  return c;
}

Status CheckManifest(const HeldShard& held, const std::string& manifest) {
  if (ManifestDigest(manifest) == held.entry.id.set) return Status::OK();
  return Status::InvalidArgument(fmt::format("shard {} of step {}: not the manifest of set {}", held.entry.shard,
                                             held.entry.step, held.entry.id.set));
}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::Create(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    std::error_code ec;
    if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    else base = GetAnyEnv("TMPDIR").value_or("");
    if (base.empty()) base = "/tmp";
  }
  DS_ASSIGN_OR_RETURN(std::string path, MakeProcessDir(base, "dsagent-snapshots."));
  // Made by mkdtemp (0700); opened and checked like the node's directory.
  auto dir = Dir::Open(path, kWhat);
  if (!dir.ok()) {
    ::rmdir(path.c_str());
    return dir.status();
  }
  auto incoming = dir->MakeDir("incoming", kWhat, 0700);
  Result<Dir> receiving = incoming.ok() ? dir->MakeDir("receiving", kWhat, 0700) : incoming.status();
  if (!receiving.ok()) {
    (void)dir->RemoveContents();
    ::rmdir(path.c_str());
    return receiving.status();
  }
  return std::unique_ptr<SnapshotStore>(new SnapshotStore(std::move(dir).value(), std::move(incoming).value(),
                                                          std::move(receiving).value()));
}

SnapshotStore::~SnapshotStore() {
  // The contents through the descriptor; the directory itself by name, an
  // entry of ours in a sticky /dev/shm (or $TMPDIR) that nobody else can swap.
  (void)dir_.RemoveContents();
  ::rmdir(dir_.path().c_str());
}

Status SnapshotStore::Hold(const Dir& step, const HeldShard& h, const std::string& manifest) {
  if (!step.Lstat("manifest.json"))
    DS_RETURN_IF_ERROR(step.WriteFile("manifest.json", manifest, ckpt::kCheckpointFileMode));
  index_.Put(h);
  return Status::OK();
}

Result<HeldShard> SnapshotStore::Adopt(const std::string& manifest_name, uint32_t origin) {
  const auto h = ParseHandoffManifest(manifest_name);
  if (!h) return Status::InvalidArgument(fmt::format("{}: not a snapshot handoff", manifest_name));
  const std::string shard_name = HandoffName(*h, kHandoffShard);
  DS_ASSIGN_OR_RETURN(std::string manifest, incoming_.ReadFile(manifest_name));
  const std::optional<struct stat> st = incoming_.Lstat(shard_name);
  if (!st || !S_ISREG(st->st_mode))
    return Status::InvalidArgument(
        fmt::format("{}: no shard file {} beside it", manifest_name, incoming_.PathOf(shard_name)));
  HeldShard held;
  held.entry = msg::ShardEntry{h->step, h->rank, h->id, origin, 1, static_cast<uint64_t>(st->st_size)};
  held.entry.id.set = ManifestDigest(manifest);
  held.crc32 = h->crc32;
  std::lock_guard<std::mutex> lock(mu_);
  DS_ASSIGN_OR_RETURN(Dir step, ckpt::MakeStepDir(dir_, SnapshotStepDirName(h->step, held.entry.id.set)));
  DS_RETURN_IF_ERROR(step.MoveFrom(incoming_, shard_name, ShardFileName(h->rank)));
  (void)incoming_.Unlink(manifest_name);
  DS_RETURN_IF_ERROR(Hold(step, held, manifest));
  return held;
}

Status SnapshotStore::Put(const ShardCopy& copy) {
  if (copy.data.size() != copy.held.entry.bytes)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: {} bytes, expected {}", copy.held.entry.shard,
                                               copy.held.entry.step, copy.data.size(), copy.held.entry.bytes));
  DS_RETURN_IF_ERROR(CheckManifest(copy.held, copy.manifest));
  const msg::ShardEntry& e = copy.held.entry;
  std::lock_guard<std::mutex> lock(mu_);
  DS_ASSIGN_OR_RETURN(Dir step, ckpt::MakeStepDir(dir_, SnapshotStepDirName(e.step, e.id.set)));
  DS_RETURN_IF_ERROR(step.WriteFile(ShardFileName(e.shard), copy.data, ckpt::kCheckpointFileMode));
  HeldShard h = copy.held;
  h.entry.tier = 1;
  return Hold(step, h, copy.manifest);
}

Result<std::unique_ptr<ShardSink>> SnapshotStore::Receive(const HeldShard& held, std::string manifest) {
  DS_RETURN_IF_ERROR(CheckManifest(held, manifest));  // before any byte: the shard is of the save it names
  const std::string name = "shard." + RandomHex(6);
  UniqueFd fd(::openat(receiving_.fd(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       ckpt::kCheckpointFileMode));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: {}", receiving_.PathOf(name), std::strerror(errno)));
  const int raw = fd.get();
  auto sink = std::make_unique<Receiving>(this, held, std::move(manifest), name, std::move(fd));  // removes it if refused
  DS_ASSIGN_OR_RETURN(uint64_t room, RoomFor(raw, dir()));
  if (held.entry.bytes > room)
    return Status::IOError(fmt::format("shard {} of step {}: {} announced, more than the {} free for it in {}",
                                       held.entry.shard, held.entry.step, GiB(held.entry.bytes), GiB(room), dir()));
  return std::unique_ptr<ShardSink>(std::move(sink));
}

Status SnapshotStore::Keep(const std::string& name, const HeldShard& h, const std::string& manifest) {
  std::lock_guard<std::mutex> lock(mu_);
  DS_ASSIGN_OR_RETURN(Dir step, ckpt::MakeStepDir(dir_, SnapshotStepDirName(h.entry.step, h.entry.id.set)));
  DS_RETURN_IF_ERROR(step.MoveFrom(receiving_, name, ShardFileName(h.entry.shard)));
  HeldShard held = h;
  held.entry.tier = 1;
  return Hold(step, held, manifest);
}

Result<ShardFile> SnapshotStore::Open(int64_t step, const std::string& set, uint32_t shard) const {
  const std::optional<HeldShard> h = index_.Find(step, set, shard);
  if (!h) return Status::NotFound(fmt::format("shard {} of step {} (set {}) is not held here", shard, step, set));
  DS_ASSIGN_OR_RETURN(Dir step_dir, ckpt::OpenStepDir(dir_, SnapshotStepDirName(step, set)));
  DS_ASSIGN_OR_RETURN(std::string manifest, step_dir.ReadFile("manifest.json"));
  return OpenShardFile(step_dir, ShardFileName(shard), *h, std::move(manifest));
}

std::vector<msg::ShardEntry> SnapshotStore::Prune(int keep, const std::string& run, const msg::SnapshotPlan& plan,
                                                  std::optional<uint32_t> spares_of) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<msg::ShardEntry> gone = index_.Prune(keep, run, plan);
  for (const msg::ShardEntry& e : gone) {
    if (!spares_of || e.origin != *spares_of) continue;
    auto step = ckpt::OpenStepDir(dir_, SnapshotStepDirName(e.step, e.id.set));
    if (step.ok()) (void)receiving_.MoveFrom(*step, ShardFileName(e.shard), fmt::format("spare.{}", e.shard));
  }
  RemoveStepDirs(dir_, gone);
  return gone;
}

void SnapshotStore::ReleaseSpares() {
  std::lock_guard<std::mutex> lock(mu_);
  auto names = receiving_.List();
  if (!names.ok()) return;
  for (const std::string& name : *names)
    if (name.rfind("spare.", 0) == 0) (void)incoming_.MoveFrom(receiving_, name, name);
}

std::vector<msg::ShardEntry> SnapshotStore::DropIf(const ShardIndex::SavePredicate& doomed) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<msg::ShardEntry> gone = index_.DropIf(doomed);
  RemoveStepDirs(dir_, gone);
  return gone;
}

}  // namespace ds
