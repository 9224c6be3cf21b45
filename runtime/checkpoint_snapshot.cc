#include "runtime/checkpoint_snapshot.h"

#include <fmt/format.h>

#include "common/dir.h"
#include "common/snapshot_handoff.h"
#include "runtime/checkpoint_files.h"

namespace ds::rt {

Status SaveSnapshot(const std::string& snapshot_dir, const CheckpointMeta& meta, const ShardState& shard,
                    Communicator& comm, std::string* buffer) {
  const int rank = comm.rank(), world = comm.size();
  EncodeShardInto(rank, shard, buffer);
  const std::string& data = *buffer;
  const std::vector<double> info = ShareShardInfo(true, data, comm);
  CheckpointMeta m = meta;
  m.world_size = world;
  const Handoff h{meta.step, static_cast<uint32_t>(rank), static_cast<uint32_t>(world),
                  static_cast<uint32_t>(info[3 * rank + 2])};
  // The agent's private directory, opened and checked like a checkpoint directory.
  Result<Dir> in = Dir::Open(snapshot_dir, "snapshot directory");
  if (in.ok()) in = in->OpenDir("incoming", "snapshot directory");
  if (!in.ok()) return in.status().Prefixed("snapshot");
  DS_RETURN_IF_ERROR(in->WriteFile(HandoffName(h, kHandoffShard), data, kCheckpointFileMode).Prefixed("snapshot"));
  return in->WriteFile(HandoffName(h, kHandoffManifest), ManifestJson(m, info), kCheckpointFileMode)
      .Prefixed("snapshot");
}

Result<LoadedCheckpoint> LoadSnapshot(const std::string& snapshot_dir, int64_t step, uint64_t num_params,
                                      int state_slots) {
  const std::string dir = fmt::format("{}/step_{:08d}", snapshot_dir, step);
  auto loaded = LoadCheckpointDir(dir, num_params, state_slots);
  if (!loaded.ok())
    return loaded.status().Prefixed(fmt::format("snapshot of step {} in {} (gathered by the agent)", step, dir));
  return loaded;
}

}  // namespace ds::rt
