#include "agent/snapshot_store.h"

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

#include "common/files.h"
#include "common/process_dirs.h"
#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_files.h"
#include "runtime/checkpoint_format.h"

namespace ds {
namespace fs = std::filesystem;

namespace {
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
  Receiving(SnapshotStore* store, HeldShard held, std::string manifest, std::string path, UniqueFd fd)
      : store_(store), held_(held), manifest_(std::move(manifest)), path_(std::move(path)), fd_(std::move(fd)) {}
  ~Receiving() override {
    if (!committed_) ::unlink(path_.c_str());
  }

  Status Write(const uint8_t* data, size_t n) override {
    if (n > held_.entry.bytes - written_)
      return Status::InvalidArgument(fmt::format("{}: more bytes than the {} announced", path_, held_.entry.bytes));
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::write(fd_.get(), data + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Status::IOError(fmt::format("{}: {}", path_, std::strerror(errno)));
      done += static_cast<size_t>(w);
    }
    written_ += n;
    return Status::OK();
  }

  Status Commit() override {
    if (written_ != held_.entry.bytes)
      return Status::InvalidArgument(
          fmt::format("{}: {} bytes received, {} announced", path_, written_, held_.entry.bytes));
    if (::fsync(fd_.get()) != 0) return Status::IOError(fmt::format("{}: fsync: {}", path_, std::strerror(errno)));
    fd_.Reset();
    DS_RETURN_IF_ERROR(store_->Keep(path_, held_, manifest_));
    committed_ = true;
    return Status::OK();
  }

 private:
  SnapshotStore* store_;
  HeldShard held_;
  std::string manifest_;
  std::string path_;
  UniqueFd fd_;
  uint64_t written_ = 0;
  bool committed_ = false;
};

Result<ShardFile> OpenShardFile(const std::string& path, const HeldShard& held, std::string manifest) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0)
    return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != held.entry.bytes)
    return Status::InvalidArgument(fmt::format("{}: not a regular file of {} bytes", path, held.entry.bytes));
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
  if (rt::Crc32(c.data) != f.held.crc32)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: crc32 mismatch (corrupt)", f.held.entry.shard,
                                               f.held.entry.step));
  return c;
}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::Create(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    std::error_code ec;
    if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    else base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  }
  DS_ASSIGN_OR_RETURN(std::string dir, MakeProcessDir(base, "dsagent-snapshots."));
  std::unique_ptr<SnapshotStore> store(new SnapshotStore(dir));
  for (const std::string& sub : {store->incoming_dir(), store->receiving_dir()})
    if (::mkdir(sub.c_str(), 0700) != 0) return Status::IOError(fmt::format("{}: {}", sub, std::strerror(errno)));
  return store;
}

SnapshotStore::~SnapshotStore() {
  std::error_code ec;
  fs::remove_all(dir(), ec);
}

Status SnapshotStore::Hold(const HeldShard& h, const std::string& manifest) {
  const std::string step_dir = index_.StepDir(h.entry.step);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  const std::string manifest_path = step_dir + "/manifest.json";
  std::error_code ec;
  if (!fs::exists(manifest_path, ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(manifest_path, manifest, rt::kCheckpointFileMode));
  index_.Put(h);
  return Status::OK();
}

Result<HeldShard> SnapshotStore::Adopt(const std::string& manifest_name, uint32_t origin) {
  const auto h = ParseHandoffManifest(manifest_name);
  if (!h) return Status::InvalidArgument(fmt::format("{}: not a snapshot handoff", manifest_name));
  const std::string in = incoming_dir() + "/";
  const std::string shard_path = in + HandoffName(*h, kHandoffShard);
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(in + manifest_name));
  struct stat st {};
  if (::lstat(shard_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::InvalidArgument(fmt::format("{}: no shard file {} beside it", manifest_name, shard_path));
  HeldShard held;
  held.entry = msg::ShardEntry{h->step, h->rank, h->world, origin, 1, static_cast<uint64_t>(st.st_size)};
  held.crc32 = h->crc32;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string step_dir = index_.StepDir(h->step);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  if (::rename(shard_path.c_str(), (step_dir + "/" + ShardFileName(h->rank)).c_str()) != 0)
    return Status::IOError(fmt::format("{}: {}", shard_path, std::strerror(errno)));
  ::unlink((in + manifest_name).c_str());
  DS_RETURN_IF_ERROR(Hold(held, manifest));
  return held;
}

Status SnapshotStore::Put(const ShardCopy& copy) {
  if (copy.data.size() != copy.held.entry.bytes)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: {} bytes, expected {}", copy.held.entry.shard,
                                               copy.held.entry.step, copy.data.size(), copy.held.entry.bytes));
  std::lock_guard<std::mutex> lock(mu_);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(index_.StepDir(copy.held.entry.step)));
  DS_RETURN_IF_ERROR(WriteFileDurably(index_.StepDir(copy.held.entry.step) + "/" + ShardFileName(copy.held.entry.shard),
                                      copy.data, rt::kCheckpointFileMode));
  HeldShard h = copy.held;
  h.entry.tier = 1;
  return Hold(h, copy.manifest);
}

Result<std::unique_ptr<ShardSink>> SnapshotStore::Receive(const HeldShard& held, std::string manifest) {
  std::string path = receiving_dir() + "/shard.XXXXXX";
  UniqueFd fd(::mkostemp(path.data(), O_CLOEXEC));
  if (fd.get() < 0) return Status::IOError(fmt::format("{}: {}", path, std::strerror(errno)));
  const int raw = fd.get();
  auto sink = std::make_unique<Receiving>(this, held, std::move(manifest), path, std::move(fd));  // removes it if refused
  DS_ASSIGN_OR_RETURN(uint64_t room, RoomFor(raw, dir()));
  if (held.entry.bytes > room)
    return Status::IOError(fmt::format("shard {} of step {}: {} announced, more than the {} free for it in {}",
                                       held.entry.shard, held.entry.step, GiB(held.entry.bytes), GiB(room), dir()));
  if (::fchmod(raw, rt::kCheckpointFileMode) != 0)
    return Status::IOError(fmt::format("{}: chmod: {}", path, std::strerror(errno)));
  return std::unique_ptr<ShardSink>(std::move(sink));
}

Status SnapshotStore::Keep(const std::string& path, const HeldShard& h, const std::string& manifest) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string step_dir = index_.StepDir(h.entry.step);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  const std::string dest = step_dir + "/" + ShardFileName(h.entry.shard);
  if (::rename(path.c_str(), dest.c_str()) != 0)
    return Status::IOError(fmt::format("{}: {}", dest, std::strerror(errno)));
  HeldShard held = h;
  held.entry.tier = 1;
  return Hold(held, manifest);
}

Result<ShardFile> SnapshotStore::Open(int64_t step, uint32_t shard) const {
  const std::optional<HeldShard> h = index_.Find(step, shard);
  if (!h) return Status::NotFound(fmt::format("shard {} of step {} is not held here", shard, step));
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(index_.StepDir(step) + "/manifest.json"));
  return OpenShardFile(index_.StepDir(step) + "/" + ShardFileName(shard), *h, std::move(manifest));
}

}  // namespace ds
