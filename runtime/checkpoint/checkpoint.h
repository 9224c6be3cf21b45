// Checkpoints of dstrain: one shard file per rank plus a manifest, in
// <dir>/step_<NNNNNNNN>/. Format (documented in checkpoint_format.md):
//   shard_<r>.bin   magic "DSCKSHD1", header, segments [flat offset, len) of
//                   the flat parameter vector, fp32 master weights, then each
//                   optimizer state slot, for those segments.
//   manifest.json   step, epoch, sampler position, RNG and loss-scaler state,
//                   run id, world size, ZeRO stage, config hash, and per
//                   shard its size and crc32.
// Every file is written under a temporary name, fsynced and renamed
// (checkpoint_files.h: private directories opened O_NOFOLLOW and used
// through their descriptor, no symlinks followed); the
// manifest is written last, so a checkpoint is complete only when its
// manifest exists. Loading reassembles the full flat vectors from all
// shards, so a checkpoint saved at world N / stage s loads at any world size
// and stage (reshard on load). Corrupt or partial checkpoints are skipped
// with a warning. Save is collective (throws CommError); Load is local.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/comm/communicator.h"
#include "runtime/model/loss_scaler.h"
#include "runtime/numeric/rng.h"
#include "runtime/engine/zero_engine.h"

namespace ds::rt {

struct CheckpointMeta {
  int64_t step = 0;             // training-loop steps done (skipped ones included)
  int64_t applied_steps = 0;    // optimizer updates done (the optimizer's step count)
  int64_t epoch = 0;            // epoch to continue in
  int64_t sample_position = 0;  // global sampler positions of `epoch` already consumed
  Rng::State rng{};
  LossScalerState scaler;
  std::string run_id;           // DSLAUNCH_RUN_ID of the run that saved it ("" outside dslaunch)
  int world_size = 1;
  int zero_stage = 0;
  std::string config_hash;      // ModelConfigHash; "" = not known (a format 1 manifest)
  uint64_t num_params = 0;
  int state_slots = 0;
};

struct LoadedCheckpoint {
  CheckpointMeta meta;
  std::string path;                        // the step_ directory
  std::string set;                         // its manifest's digest (wire/snapshot_handoff.h)
  std::vector<float> master;               // num_params floats
  std::vector<std::vector<float>> state;   // state_slots x num_params
};

// Writes this rank's shard; rank 0 then writes the manifest and prunes to
// the newest `keep` complete checkpoints. Collective. An error on any rank
// is returned on every rank: its own reason on the rank that failed
// (IOError naming the file, PermissionDenied for a directory or file of
// another user or a planted symlink; checkpoint_files.h), "rank r could
// not write ..." on the others.
Status SaveCheckpoint(const std::string& dir, const CheckpointMeta& meta, const ShardState& shard,
                      Communicator& comm, int keep);

// The newest complete and valid checkpoint in `dir` whose shape matches
// (num_params, state_slots); nullopt when there is none (or no `dir`).
// Invalid ones, and step directories that are symlinks or not this user's,
// are skipped with a warning naming the directory and the reason. An error
// only when `dir` itself is a symlink or belongs to another user
// (PermissionDenied, as for save).
Result<std::optional<LoadedCheckpoint>> LoadNewestCheckpoint(const std::string& dir,
                                                             uint64_t num_params, int state_slots);

// The one checkpoint in `step_dir` (a step_ directory; it and the directory
// holding it are opened and checked as above), verified as above; an error
// says why it is unusable.
Result<LoadedCheckpoint> LoadCheckpointDir(const std::string& step_dir, uint64_t num_params, int state_slots);

// Building blocks of a save, shared with snapshots (checkpoint_snapshot.h):
// the shard file's bytes; every rank's [failed, bytes, crc32] (collective);
// the manifest from them.
std::string EncodeShard(int rank, const ShardState& shard);
void EncodeShardInto(int rank, const ShardState& shard, std::string* out);  // reusing out's buffer
// The shard file's bytes before its floats (magic, header, segments): the
// file is this, shard.master, then each shard.state slot.
void EncodeShardHeaderInto(int rank, const ShardState& shard, std::string* out);
std::vector<double> ShareShardInfo(bool ok, const std::string& data, Communicator& comm);
std::string ManifestJson(const CheckpointMeta& meta, const std::vector<double>& info);

// Complete checkpoints in `dir` (step directories of this user with a
// manifest), oldest first; none when `dir` cannot be opened as above.
std::vector<std::string> ListCheckpoints(const std::string& dir);

// The config hash a manifest records (checkpoint_format.md "Run identity"):
// 8 hex digits of the crc32 of what gives the saved numbers their meaning,
// the model's layer sizes and activation and the optimizer's type. The
// learning rate, schedule, batch sizes, epochs, data and ZeRO stage may
// change between runs that resume each other; these may not.
std::string ModelConfigHash(const MlpConfig& model, OptimizerType optimizer);

}  // namespace ds::rt
