// Snapshots: with DSLAUNCH_SNAPSHOT_DIR set (the node agent's memory
// directory, checkpoint.shared false or checkpoint.replicas > 0), a rank does
// not write the checkpoint directory itself. It hands its shard and the
// step's manifest to its agent, which keeps them in memory, writes them to
// the node's disk and replicates them (agent/snapshots/keeper.h). dstrain
// saves through SnapshotWriter (checkpoint_snapshot_writer.h: the rank
// copies its shard, a helper writes it, the next step hands it over);
// SaveSnapshot is the same save in one blocking call.
// A restarted rank loads exactly the save the coordinator chose
// (DSLAUNCH_RESUME_STEP and DSLAUNCH_RESUME_SET), which its agent has
// gathered whole beforehand. Layout in checkpoint_format.md "Snapshots".
#pragma once

#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint.h"

namespace ds::rt {

// Writes the handoff (wire/snapshot_handoff.h): the shard, then the
// manifest, whose arrival tells the agent. Collective. IOError naming the
// file when it cannot. `buffer` holds the encoded shard; pass the same one
// every time. meta.run_id must be a run id (1 to 32 hex digits).
Status SaveSnapshot(const std::string& snapshot_dir, const CheckpointMeta& meta, const ShardState& shard,
                    Communicator& comm, std::string* buffer);
// The local half of SaveSnapshot: rank `rank`'s encoded shard `data` and
// the manifest built from `info` (every rank's [failed, bytes, crc32], as
// ShareShardInfo returns it) written as the handoff, meta.world_size ranks.
Status WriteSnapshotHandoff(const std::string& snapshot_dir, const CheckpointMeta& meta, int rank,
                            const std::string& data, const std::vector<double>& info);

// What the save `set` of step `step` in the agent's memory directory is (its
// manifest, the one `set` names), without reading its shards.
Result<CheckpointMeta> ReadSnapshotMeta(const std::string& snapshot_dir, int64_t step, const std::string& set);
// The save `set` of step `step` in the agent's memory directory, verified
// like any checkpoint (LoadCheckpointDir) and its manifest the one `set`
// names (an error says it is another save).
Result<LoadedCheckpoint> LoadSnapshot(const std::string& snapshot_dir, int64_t step, const std::string& set,
                                      uint64_t num_params, int state_slots);

}  // namespace ds::rt
