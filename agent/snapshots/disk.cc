#include "agent/snapshots/disk.h"

#include <sys/stat.h>

#include <sstream>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "common/log.h"
#include "wire/snapshot_handoff.h"

namespace ds {
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
  auto root = ckpt::OpenCheckpointDir(dir());
  if (!root.ok()) {
    if (root.status().code() != Status::Code::kNotFound) DS_LOG(Warn, Ckpt) << "snapshots: " << root.status().message();
    return {};
  }
  auto steps = root->List();
  if (!steps.ok()) {
    DS_LOG(Warn, Ckpt) << "snapshots: " << steps.status().message();
    return {};
  }
  for (const std::string& name : *steps) {
    if (name.rfind("step_", 0) != 0) continue;
    auto step_dir = ckpt::OpenStepDir(*root, name);
    auto files = step_dir.ok() ? step_dir->List() : Result<std::vector<std::string>>(step_dir.status());
    if (!files.ok()) {
      DS_LOG(Warn, Ckpt) << "snapshots: skipping " << files.status().message();
      continue;
    }
    auto manifest = step_dir->ReadFile("snapshot.json");
    for (const std::string& f : *files) {
      if (f.size() < 5 || f.compare(f.size() - 5, 5, ".held") != 0) continue;
      auto text = step_dir->ReadFile(f);
      HeldShard h;
      if (!text.ok() || !ParseRecord(*text, name, &h)) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping " << step_dir->PathOf(f)
                           << ": not a shard record of this directory's save (or an older dslaunch's)";
        continue;
      }
      h.entry.tier = 2;
      if (!manifest.ok() || !CheckManifest(h, *manifest).ok()) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping " << step_dir->PathOf(f) << ": " << step_dir->PathOf("snapshot.json")
                           << " is missing or not the manifest of set " << h.entry.id.set;
        continue;
      }
      const auto shard = step_dir->Lstat(fmt::format("shard_{}.bin", h.entry.shard));
      if (!shard || !S_ISREG(shard->st_mode) || static_cast<uint64_t>(shard->st_size) != h.entry.bytes) {
        DS_LOG(Warn, Ckpt) << "snapshots: skipping shard " << h.entry.shard << " in " << step_dir->path()
                           << ": missing or not " << h.entry.bytes << " bytes";
        continue;
      }
      index_.Put(h);
    }
  }
  return index_.All();
}

// The shard, then the save's manifest, then its record: a record counts only
// beside a shard and a manifest that are there (Scan).
Status SnapshotDisk::Persist(const ShardFile& src) {
  const msg::ShardEntry& e = src.held.entry;
  DS_RETURN_IF_ERROR(CheckManifest(src.held, src.manifest));
  DS_ASSIGN_OR_RETURN(Dir root, ckpt::MakeCheckpointDir(dir()));
  DS_ASSIGN_OR_RETURN(Dir step, ckpt::MakeStepDir(root, SnapshotStepDirName(e.step, e.id.set)));
  DS_RETURN_IF_ERROR(
      step.CopyFile(fmt::format("shard_{}.bin", e.shard), src.fd.get(), e.bytes, ckpt::kCheckpointFileMode));
  HeldShard h = src.held;
  h.entry.tier = 2;
  if (!step.Lstat("snapshot.json"))
    DS_RETURN_IF_ERROR(step.WriteFile("snapshot.json", src.manifest, ckpt::kCheckpointFileMode));
  DS_RETURN_IF_ERROR(step.WriteFile(fmt::format("shard_{}.held", e.shard), Record(h), ckpt::kCheckpointFileMode));
  index_.Put(h);
  if (index_.CountAt(e.step, e.id.set) == e.id.world && !step.Lstat("manifest.json"))
    DS_RETURN_IF_ERROR(step.WriteFile("manifest.json", src.manifest, ckpt::kCheckpointFileMode));
  return Status::OK();
}

Result<ShardFile> SnapshotDisk::Open(int64_t step, const std::string& set, uint32_t shard) const {
  const std::optional<HeldShard> held = index_.Find(step, set, shard);
  if (!held) return Status::NotFound(fmt::format("shard {} of step {} (set {}) is not on disk here", shard, step, set));
  DS_ASSIGN_OR_RETURN(Dir root, ckpt::OpenCheckpointDir(dir()));
  DS_ASSIGN_OR_RETURN(Dir step_dir, ckpt::OpenStepDir(root, SnapshotStepDirName(step, set)));
  DS_ASSIGN_OR_RETURN(std::string manifest, step_dir.ReadFile("snapshot.json"));
  return OpenShardFile(step_dir, fmt::format("shard_{}.bin", shard), *held, std::move(manifest));
}

std::vector<msg::ShardEntry> SnapshotDisk::RemoveSteps(std::vector<msg::ShardEntry> gone) {
  if (gone.empty()) return gone;
  auto root = ckpt::OpenCheckpointDir(dir());
  if (root.ok())
    RemoveStepDirs(*root, gone);
  else
    DS_LOG(Warn, Ckpt) << "snapshots: no step removed: " << root.status().message();
  return gone;
}

}  // namespace ds
