#include "runtime/checkpoint/snapshot.h"

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "common/dir.h"
#include "runtime/checkpoint/manifest.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {

Status SaveSnapshot(const std::string& snapshot_dir, const CheckpointMeta& meta, const ShardState& shard,
                    Communicator& comm, std::string* buffer) {
  EncodeShardInto(comm.rank(), shard, buffer);
  const std::vector<double> info = ShareShardInfo(true, *buffer, comm);
  CheckpointMeta m = meta;
  m.world_size = comm.size();
  return WriteSnapshotHandoff(snapshot_dir, m, comm.rank(), *buffer, info);
}

Status WriteSnapshotHandoff(const std::string& snapshot_dir, const CheckpointMeta& meta, int rank,
                            const std::string& data, const std::vector<double>& info) {
  Handoff h;
  h.step = meta.step;
  h.rank = static_cast<uint32_t>(rank);
  h.crc32 = static_cast<uint32_t>(info[3 * rank + 2]);
  h.id = msg::SnapshotId{meta.run_id, static_cast<uint32_t>(meta.world_size), static_cast<uint8_t>(meta.zero_stage),
                         meta.config_hash, ""};
  if (const std::string problem = SnapshotIdProblem(h.id, /*set_required=*/false); !problem.empty())
    return Status::InvalidArgument("snapshot: " + problem);
  // The agent's private directory, opened and checked like a checkpoint directory.
  Result<Dir> in = Dir::Open(snapshot_dir, "snapshot directory");
  if (in.ok()) in = in->OpenDir("incoming", "snapshot directory");
  if (!in.ok()) return in.status().Prefixed("snapshot");
  DS_RETURN_IF_ERROR(in->WriteFile(HandoffName(h, kHandoffShard), data, ckpt::kCheckpointFileMode).Prefixed("snapshot"));
  return in->WriteFile(HandoffName(h, kHandoffManifest), ManifestJson(meta, info), ckpt::kCheckpointFileMode)
      .Prefixed("snapshot");
}

namespace {
std::string SaveDir(const std::string& snapshot_dir, int64_t step, const std::string& set) {
  return snapshot_dir + "/" + SnapshotStepDirName(step, set);
}
std::string Where(const std::string& dir, int64_t step) {
  return fmt::format("snapshot of step {} in {} (gathered by the agent)", step, dir);
}
}  // namespace

Result<CheckpointMeta> ReadSnapshotMeta(const std::string& snapshot_dir, int64_t step, const std::string& set) {
  const std::string dir = SaveDir(snapshot_dir, step, set);
  Result<Dir> parent = ckpt::OpenCheckpointDir(snapshot_dir);
  Result<Dir> save = parent.ok() ? ckpt::OpenStepDir(*parent, SnapshotStepDirName(step, set)) : parent.status();
  Result<std::string> text = save.ok() ? save->ReadFile("manifest.json") : save.status();
  if (!text.ok()) return text.status().Prefixed(Where(dir, step));
  if (ManifestDigest(*text) != set)
    return Status::InvalidArgument(fmt::format("{}: its manifest is of another save (set {})", Where(dir, step),
                                               ManifestDigest(*text)));
  auto manifest = ParseManifest(*text);
  if (!manifest.ok()) return manifest.status().Prefixed(Where(dir, step));
  return manifest->meta;
}

Result<LoadedCheckpoint> LoadSnapshot(const std::string& snapshot_dir, int64_t step, const std::string& set,
                                      uint64_t num_params, int state_slots) {
  const std::string dir = SaveDir(snapshot_dir, step, set);
  auto loaded = LoadCheckpointDir(dir, num_params, state_slots);
  if (loaded.ok() && loaded->set != set)
    loaded = Status::InvalidArgument(fmt::format("its manifest is of another save (set {})", loaded->set));
  if (!loaded.ok()) return loaded.status().Prefixed(Where(dir, step));
  return loaded;
}

}  // namespace ds::rt
