#include "agent/snapshot_disk.h"

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "common/files.h"
#include "common/log.h"
#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_files.h"

namespace ds {
namespace fs = std::filesystem;

namespace {
std::string Record(const HeldShard& h) {
  const msg::ShardEntry& e = h.entry;
  return fmt::format("held 2 {} {} {} {} {} {} {} {} {} {}\n", e.step, e.shard, e.id.world, e.id.zero_stage,
                     e.id.config, e.id.run, e.id.set, e.origin, e.bytes, h.crc32);
}
// A record of the format above that names the save `dir_name` is of.
bool ParseRecord(const std::string& text, const std::string& dir_name, HeldShard* h) {
  std::istringstream in(text);
  std::string tag, version;
  unsigned stage = 0;
  msg::ShardEntry& e = h->entry;
  if (!(in >> tag >> version >> e.step >> e.shard >> e.id.world >> stage >> e.id.config >> e.id.run >> e.id.set >>
        e.origin >> e.bytes >> h->crc32) ||
      tag != "held" || version != "2" || stage > 3)
    return false;
  e.id.zero_stage = static_cast<uint8_t>(stage);
  return SnapshotIdProblem(e.id).empty() && e.shard < e.id.world && e.step >= 0 &&
         SnapshotStepDirName(e.step, e.id.set) == dir_name;
}
}  // namespace

std::vector<HeldShard> SnapshotDisk::Scan() {
  index_.Clear();
  if (!rt::CheckCheckpointDir(dir()).ok()) return {};
  std::error_code ec;
  for (const auto& step_dir : fs::directory_iterator(dir(), ec)) {
    const std::string name = step_dir.path().filename().string();
    if (name.rfind("step_", 0) != 0) continue;
    if (Status st = rt::CheckStepDir(step_dir.path().string()); !st.ok()) {
      DS_LOG(Warn, Ckpt) << "snapshots: skipping " << st.message();
      continue;
    }
    auto manifest = rt::ReadCheckpointFile((step_dir.path() / "snapshot.json").string());
    for (const auto& f : fs::directory_iterator(step_dir.path(), ec)) {
      if (f.path().extension() != ".held") continue;
      auto text = rt::ReadCheckpointFile(f.path().string());
      HeldShard h;
      if (!text.ok() || !ParseRecord(*text, name, &h)) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping " << f.path().string()
                           << ": not a shard record of this directory's save (or an older dslaunch's)";
        continue;
      }
      h.entry.tier = 2;
      if (!manifest.ok() || !CheckManifest(h, *manifest).ok()) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping " << f.path().string() << ": " << step_dir.path().string()
                           << "/snapshot.json is missing or not the manifest of set " << h.entry.id.set;
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
  DS_RETURN_IF_ERROR(CheckManifest(src.held, src.manifest));
  const std::string step_dir = index_.StepDir(e.step, e.id.set);
  DS_RETURN_IF_ERROR(rt::MakeCheckpointDir(dir()));
  DS_RETURN_IF_ERROR(rt::MakeStepDir(step_dir));
  DS_RETURN_IF_ERROR(CopyFileDurably(src.fd.get(), e.bytes, fmt::format("{}/shard_{}.bin", step_dir, e.shard),
                                     rt::kCheckpointFileMode));
  HeldShard h = src.held;
  h.entry.tier = 2;
  std::error_code ec;
  if (!fs::exists(step_dir + "/snapshot.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/snapshot.json", src.manifest, rt::kCheckpointFileMode));
  DS_RETURN_IF_ERROR(WriteFileDurably(fmt::format("{}/shard_{}.held", step_dir, e.shard), Record(h), rt::kCheckpointFileMode));
  index_.Put(h);
  if (index_.CountAt(e.step, e.id.set) == e.id.world && !fs::exists(step_dir + "/manifest.json", ec))
    DS_RETURN_IF_ERROR(WriteFileDurably(step_dir + "/manifest.json", src.manifest, rt::kCheckpointFileMode));
  return Status::OK();
}

Result<ShardFile> SnapshotDisk::Open(int64_t step, const std::string& set, uint32_t shard) const {
  const std::optional<HeldShard> held = index_.Find(step, set, shard);
  if (!held) return Status::NotFound(fmt::format("shard {} of step {} (set {}) is not on disk here", shard, step, set));
  const std::string step_dir = index_.StepDir(step, set);
  DS_ASSIGN_OR_RETURN(std::string manifest, rt::ReadCheckpointFile(step_dir + "/snapshot.json"));
  return OpenShardFile(fmt::format("{}/shard_{}.bin", step_dir, shard), *held, std::move(manifest));
}

}  // namespace ds
