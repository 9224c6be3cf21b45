#include "agent/snapshot_disk.h"


#include <filesystem>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/files.h"
#include "common/log.h"
#include "runtime/checkpoint_format.h"
#include "runtime/checkpoint_files.h"

namespace ds {
namespace fs = std::filesystem;

namespace {
std::string Record(const HeldShard& h) {
  return fmt::format("{} {} {} {} {} {}\n", h.entry.step, h.entry.shard, h.entry.world, h.entry.origin,
                     h.entry.bytes, h.crc32);
}
bool ParseRecord(const std::string& text, HeldShard* h) {
  std::istringstream in(text);
  return static_cast<bool>(in >> h->entry.step >> h->entry.shard >> h->entry.world >> h->entry.origin >>
                           h->entry.bytes >> h->crc32) &&
         h->entry.world > 0 && h->entry.shard < h->entry.world;
}
}  // namespace

std::string SnapshotDisk::StepDir(int64_t step) const { return fmt::format("{}/step_{:08d}", dir_, step); }

std::vector<HeldShard> SnapshotDisk::Scan() {
  std::lock_guard<std::mutex> lock(mu_);
  held_.clear();
  if (!rt::CheckCheckpointDir(dir_).ok()) return {};
  std::error_code ec;
  for (const auto& step_dir : fs::directory_iterator(dir_, ec)) {
    if (step_dir.path().filename().string().rfind("step_", 0) != 0) continue;
    if (Status st = rt::CheckStepDir(step_dir.path().string()); !st.ok()) {
      DS_LOG(Warn, Ckpt) << "snapshots: skipping " << st.message();
      continue;
    }
    for (const auto& f : fs::directory_iterator(step_dir.path(), ec)) {
      if (f.path().extension() != ".held") continue;
      auto text = rt::ReadCheckpointFile(f.path().string());
      HeldShard h;
      h.entry.tier = 2;
      if (!text.ok() || !ParseRecord(*text, &h)) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping " << f.path().string() << ": not a shard record";
        continue;
      }
      std::error_code size_ec;
      const auto size = fs::file_size(step_dir.path() / fmt::format("shard_{}.bin", h.entry.shard), size_ec);
      if (size_ec || size != h.entry.bytes) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping shard " << h.entry.shard << " in " << step_dir.path().string()
                           << ": missing or not " << h.entry.bytes << " bytes";
        continue;
      }
      held_[{h.entry.step, h.entry.shard}] = h;
    }
  }
  std::vector<HeldShard> out;
  for (const auto& [k, h] : held_) out.push_back(h);
  return out;
}

Status SnapshotDisk::Persist(const ShardCopy& copy) {
  const msg::ShardEntry& e = copy.held.entry;
  const std::string step_dir = StepDir(e.step);
  DS_RETURN_IF_ERROR(rt::MakeCheckpointDir(dir_));
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  DS_RETURN_IF_ERROR(WriteFileDurably(fmt::format("{}/shard_{}.bin", step_dir, e.shard), copy.data, rt::kCheckpointFileMode));
  HeldShard h = copy.held;
  h.entry.tier = 2;
  DS_RETURN_IF_ERROR(WriteFileDurably(fmt::format("{}/shard_{}.held", step_dir, e.shard), Record(h), rt::kCheckpointFileMode));
  std::error_code ec;
  if (!fs::exists(step_dir + "/snapshot.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/snapshot.json", copy.manifest, rt::kCheckpointFileMode));
  std::lock_guard<std::mutex> lock(mu_);
  held_[{e.step, e.shard}] = h;
  uint32_t here = 0;
  for (auto it = held_.lower_bound({e.step, 0}); it != held_.end() && it->first.first == e.step; ++it) ++here;
  if (here == e.world && !fs::exists(step_dir + "/manifest.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/manifest.json", copy.manifest, rt::kCheckpointFileMode));
  return Status::OK();
}

Result<ShardCopy> SnapshotDisk::Read(int64_t step, uint32_t shard) const {
  ShardCopy c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find({step, shard});
    if (it == held_.end()) return Status::NotFound(fmt::format("shard {} of step {} is not on disk here", shard, step));
    c.held = it->second;
  }
  const std::string step_dir = StepDir(step);
  DS_ASSIGN_OR_RETURN(c.manifest, rt::ReadCheckpointFile(step_dir + "/snapshot.json"));
  DS_ASSIGN_OR_RETURN(c.data, rt::ReadCheckpointFile(fmt::format("{}/shard_{}.bin", step_dir, shard)));
  const uint32_t crc = rt::Crc32(c.data);
  if (c.data.size() != c.held.entry.bytes || crc != c.held.crc32)
    return Status::InvalidArgument(fmt::format("{}/shard_{}.bin: size or crc32 differs from its record (corrupt)",
                                               step_dir, shard));
  return c;
}

bool SnapshotDisk::Has(int64_t step, uint32_t shard) const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.count({step, shard}) > 0;
}

std::vector<msg::ShardEntry> SnapshotDisk::Drop(int64_t step) {
  std::vector<msg::ShardEntry> gone;
  for (auto it = held_.lower_bound({step, 0}); it != held_.end() && it->first.first == step;) {
    gone.push_back(it->second.entry);
    it = held_.erase(it);
  }
  std::error_code ec;
  fs::remove_all(StepDir(step), ec);
  return gone;
}

std::vector<msg::ShardEntry> SnapshotDisk::Prune(int keep) {
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

std::vector<msg::ShardEntry> SnapshotDisk::DropAbove(int64_t step) {
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
