#include "agent/snapshot_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

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
}  // namespace

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
    else base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  }
  DS_ASSIGN_OR_RETURN(std::string dir, MakeProcessDir(base, "dsagent-snapshots."));
  std::unique_ptr<SnapshotStore> store(new SnapshotStore(dir));
  if (::mkdir(store->incoming_dir().c_str(), 0700) != 0)
    return Status::IOError(fmt::format("{}: {}", store->incoming_dir(), std::strerror(errno)));
  return store;
}

SnapshotStore::~SnapshotStore() {
  std::error_code ec;
  fs::remove_all(dir(), ec);
}

Status SnapshotStore::Hold(const HeldShard& h, const std::string& manifest) {
  const std::string step_dir = index_.StepDir(h.entry.step, h.entry.id.set);
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
  held.entry = msg::ShardEntry{h->step, h->rank, h->id, origin, 1, static_cast<uint64_t>(st.st_size)};
  held.entry.id.set = ManifestDigest(manifest);
  held.crc32 = h->crc32;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string step_dir = index_.StepDir(h->step, held.entry.id.set);
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
  DS_RETURN_IF_ERROR(CheckManifest(copy.held, copy.manifest));
  const msg::ShardEntry& e = copy.held.entry;
  std::lock_guard<std::mutex> lock(mu_);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(index_.StepDir(e.step, e.id.set)));
  DS_RETURN_IF_ERROR(WriteFileDurably(index_.StepDir(e.step, e.id.set) + "/" + ShardFileName(e.shard), copy.data,
                                      rt::kCheckpointFileMode));
  HeldShard h = copy.held;
  h.entry.tier = 1;
  return Hold(h, copy.manifest);
}

Result<ShardFile> SnapshotStore::Open(int64_t step, const std::string& set, uint32_t shard) const {
  const std::optional<HeldShard> h = index_.Find(step, set, shard);
  if (!h) return Status::NotFound(fmt::format("shard {} of step {} (set {}) is not held here", shard, step, set));
  const std::string dir = index_.StepDir(step, set);
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(dir + "/manifest.json"));
  return OpenShardFile(dir + "/" + ShardFileName(shard), *h, std::move(manifest));
}

}  // namespace ds
