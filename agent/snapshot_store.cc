#include "agent/snapshot_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "agent/agent_dirs.h"
#include "common/files.h"
#include "runtime/checkpoint_format.h"
#include "runtime/checkpoint_files.h"

namespace ds {
namespace fs = std::filesystem;

namespace {
std::string ShardFile(uint32_t shard) { return fmt::format("shard_{}.bin", shard); }

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(s);
  return true;
}
}  // namespace

std::string HandoffName(int64_t step, uint32_t rank, uint32_t world, const char* suffix) {
  return fmt::format("{:08d}.{}.{}.{}", step, rank, world, suffix);
}

std::optional<std::tuple<int64_t, uint32_t, uint32_t>> ParseHandoffName(const std::string& name) {
  const std::string suffix = ".manifest";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string stem = name.substr(0, name.size() - suffix.size());
  const size_t a = stem.find('.'), b = stem.find('.', a == std::string::npos ? a : a + 1);
  if (a == std::string::npos || b == std::string::npos) return std::nullopt;
  uint64_t step, rank, world;
  if (!ParseU64(stem.substr(0, a), &step) || !ParseU64(stem.substr(a + 1, b - a - 1), &rank) ||
      !ParseU64(stem.substr(b + 1), &world) || world == 0 || rank >= world || world > (1u << 24))
    return std::nullopt;
  return std::make_tuple(static_cast<int64_t>(step), static_cast<uint32_t>(rank), static_cast<uint32_t>(world));
}

Result<std::unique_ptr<SnapshotStore>> SnapshotStore::Create(const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    std::error_code ec;
    if (fs::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    else base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  }
  DS_ASSIGN_OR_RETURN(std::string dir, MakeAgentDir(base, "dsagent-snapshots."));
  std::unique_ptr<SnapshotStore> store(new SnapshotStore(dir));
  if (::mkdir(store->incoming_dir().c_str(), 0700) != 0)
    return Status::IOError(fmt::format("{}: {}", store->incoming_dir(), std::strerror(errno)));
  return store;
}

SnapshotStore::~SnapshotStore() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string SnapshotStore::StepDir(int64_t step) const { return fmt::format("{}/step_{:08d}", dir_, step); }

Status SnapshotStore::Hold(const HeldShard& h, const std::string& manifest) {
  const std::string step_dir = StepDir(h.entry.step);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  const std::string manifest_path = step_dir + "/manifest.json";
  std::error_code ec;
  if (!fs::exists(manifest_path, ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(manifest_path, manifest, rt::kCheckpointFileMode));
  held_[{h.entry.step, h.entry.shard}] = h;
  return Status::OK();
}

Result<HeldShard> SnapshotStore::Adopt(const std::string& manifest_name, uint32_t origin) {
  auto parsed = ParseHandoffName(manifest_name);
  if (!parsed) return Status::InvalidArgument(fmt::format("{}: not a snapshot handoff", manifest_name));
  const auto [step, rank, world] = *parsed;
  const std::string in = incoming_dir() + "/";
  const std::string shard_path = in + HandoffName(step, rank, world, "shard");
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(in + manifest_name));
  DS_ASSIGN_OR_RETURN(std::string data, rt::ReadCheckpointFile(shard_path));
  HeldShard h;
  h.entry = msg::ShardEntry{step, rank, world, origin, 1, data.size()};
  h.crc32 = rt::Crc32(data);
  std::lock_guard<std::mutex> lock(mu_);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(StepDir(step)));
  if (::rename(shard_path.c_str(), (StepDir(step) + "/" + ShardFile(rank)).c_str()) != 0)
    return Status::IOError(fmt::format("{}: {}", shard_path, std::strerror(errno)));
  ::unlink((in + manifest_name).c_str());
  DS_RETURN_IF_ERROR(Hold(h, manifest));
  return h;
}

Status SnapshotStore::Put(const ShardCopy& copy) {
  if (copy.data.size() != copy.held.entry.bytes)
    return Status::InvalidArgument(fmt::format("shard {} of step {}: {} bytes, expected {}", copy.held.entry.shard,
                                               copy.held.entry.step, copy.data.size(), copy.held.entry.bytes));
  std::lock_guard<std::mutex> lock(mu_);
  DS_RETURN_IF_ERROR(rt::MakeStepDir(StepDir(copy.held.entry.step)));
  DS_RETURN_IF_ERROR(WriteFileDurably(StepDir(copy.held.entry.step) + "/" + ShardFile(copy.held.entry.shard),
                                      copy.data, rt::kCheckpointFileMode));
  HeldShard h = copy.held;
  h.entry.tier = 1;
  return Hold(h, copy.manifest);
}

Result<ShardCopy> SnapshotStore::Read(int64_t step, uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find({step, shard});
  if (it == held_.end()) return Status::NotFound(fmt::format("shard {} of step {} is not held here", shard, step));
  ShardCopy c;
  c.held = it->second;
  DS_ASSIGN_OR_RETURN(c.manifest, rt::ReadCheckpointFile(StepDir(step) + "/manifest.json"));
  DS_ASSIGN_OR_RETURN(c.data, rt::ReadCheckpointFile(StepDir(step) + "/" + ShardFile(shard)));
  return c;
}

bool SnapshotStore::Has(int64_t step, uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.count({step, shard}) > 0;
}

std::vector<HeldShard> SnapshotStore::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldShard> out;
  for (const auto& [k, h] : held_) out.push_back(h);
  return out;
}

std::vector<msg::ShardEntry> SnapshotStore::Drop(int64_t step) {
  std::vector<msg::ShardEntry> gone;
  for (auto it = held_.lower_bound({step, 0}); it != held_.end() && it->first.first == step;) {
    gone.push_back(it->second.entry);
    it = held_.erase(it);
  }
  std::error_code ec;
  fs::remove_all(StepDir(step), ec);
  return gone;
}

std::vector<msg::ShardEntry> SnapshotStore::Prune(int keep) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> steps;
  for (const auto& [k, h] : held_) steps.insert(k.first);
  std::vector<msg::ShardEntry> gone;
  while (static_cast<int>(steps.size()) > std::max(keep, 1)) {
    auto dropped = Drop(*steps.begin());
    gone.insert(gone.end(), dropped.begin(), dropped.end());
    steps.erase(steps.begin());
  }
  return gone;
}

std::vector<msg::ShardEntry> SnapshotStore::DropAbove(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int64_t> steps;
  for (const auto& [k, h] : held_)
    if (k.first > step) steps.insert(k.first);
  std::vector<msg::ShardEntry> gone;
  for (int64_t s : steps) {
    auto dropped = Drop(s);
    gone.insert(gone.end(), dropped.begin(), dropped.end());
  }
  return gone;
}

}  // namespace ds
