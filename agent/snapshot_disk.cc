#include "agent/snapshot_disk.h"


#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "common/files.h"
#include "common/log.h"
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

std::vector<HeldShard> SnapshotDisk::Scan() {
  index_.Clear();
  if (!rt::CheckCheckpointDir(dir()).ok()) return {};
  std::error_code ec;
  for (const auto& step_dir : fs::directory_iterator(dir(), ec)) {
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
      index_.Put(h);
    }
  }
  return index_.All();
}

Status SnapshotDisk::Persist(const ShardFile& src) {
  const msg::ShardEntry& e = src.held.entry;
  const std::string step_dir = index_.StepDir(e.step);
  DS_RETURN_IF_ERROR(rt::MakeCheckpointDir(dir()));
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  DS_RETURN_IF_ERROR(CopyFileDurably(src.fd.get(), e.bytes, fmt::format("{}/shard_{}.bin", step_dir, e.shard),
                                     rt::kCheckpointFileMode));
  HeldShard h = src.held;
  h.entry.tier = 2;
  DS_RETURN_IF_ERROR(WriteFileDurably(fmt::format("{}/shard_{}.held", step_dir, e.shard), Record(h), rt::kCheckpointFileMode));
  std::error_code ec;
  if (!fs::exists(step_dir + "/snapshot.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/snapshot.json", src.manifest, rt::kCheckpointFileMode));
  index_.Put(h);
  if (index_.CountAt(e.step) == e.world && !fs::exists(step_dir + "/manifest.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/manifest.json", src.manifest, rt::kCheckpointFileMode));
  return Status::OK();
}

Result<ShardFile> SnapshotDisk::Open(int64_t step, uint32_t shard) const {
  const std::optional<HeldShard> held = index_.Find(step, shard);
  if (!held) return Status::NotFound(fmt::format("shard {} of step {} is not on disk here", shard, step));
  const std::string step_dir = index_.StepDir(step);
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(step_dir + "/snapshot.json"));
  return OpenShardFile(fmt::format("{}/shard_{}.bin", step_dir, shard), *held, std::move(manifest));
}

}  // namespace ds
