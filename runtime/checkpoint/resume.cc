#include "runtime/checkpoint/resume.h"

#include <filesystem>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "common/log.h"
#include "runtime/checkpoint/manifest.h"
#include "runtime/checkpoint/snapshot.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

Result<ResumeChoice> FromSnapshot(const ResumeRequest& r) {
  if (!IsRunId(r.run_id))
    return Status::InvalidArgument(fmt::format(
        "DSLAUNCH_SNAPSHOT_DIR is set but DSLAUNCH_RUN_ID is '{}', not a run id (dslaunch sets both)", r.run_id));
  if (r.resume_step < 0) return ResumeChoice{};
  // Its config first: a save of another config may be of another shape too.
  DS_ASSIGN_OR_RETURN(CheckpointMeta meta, ReadSnapshotMeta(r.snapshot_dir, r.resume_step, r.resume_set));
  if (meta.config_hash != r.config_hash)
    return ResumeChoice{std::nullopt,
                        fmt::format("not resuming step {} of run {}: it was saved with another model/optimizer "
                                    "config (hash {}; this run's is {}); starting fresh",
                                    meta.step, meta.run_id, meta.config_hash, r.config_hash)};
  DS_ASSIGN_OR_RETURN(LoadedCheckpoint ck,
                      LoadSnapshot(r.snapshot_dir, r.resume_step, r.resume_set, r.num_params, r.state_slots));
  return ResumeChoice{std::move(ck), ""};
}

// Every complete checkpoint in `dir` must be of this config (or of an
// unknown one, written by an older dstrain): this run prunes and may
// overwrite what the directory holds.
Status CheckDirConfig(const std::string& dir, const std::string& config_hash) {
  auto ckpt = ckpt::OpenCheckpointDir(dir);
  if (!ckpt.ok()) return Status::OK();  // LoadNewestCheckpoint says why
  for (const std::string& step_dir : ListCheckpoints(dir)) {
    auto step = ckpt::OpenStepDir(*ckpt, fs::path(step_dir).filename().string());
    auto text = step.ok() ? step->ReadFile("manifest.json") : Result<std::string>(step.status());
    if (!text.ok()) continue;  // LoadNewestCheckpoint says why it skips it
    auto manifest = ParseManifest(*text);
    if (!manifest.ok() || manifest->meta.config_hash.empty() || manifest->meta.config_hash == config_hash) continue;
    return Status::InvalidArgument(fmt::format(
        "checkpoint directory {} holds {}, saved with another model/optimizer config (hash {}; this run's is {}): "
        "refusing to resume from it or to save beside it; use another checkpoint.dir, or move {} away",
        dir, fs::path(step_dir).filename().string(), manifest->meta.config_hash, config_hash, step_dir));
  }
  return Status::OK();
}

Result<ResumeChoice> FromDirectory(const ResumeRequest& r) {
  if (r.checkpoint_dir.empty()) return ResumeChoice{};
  DS_RETURN_IF_ERROR(CheckDirConfig(r.checkpoint_dir, r.config_hash));
  DS_ASSIGN_OR_RETURN(std::optional<LoadedCheckpoint> ck,
                      LoadNewestCheckpoint(r.checkpoint_dir, r.num_params, r.state_slots));
  if (ck && ck->meta.config_hash.empty())
    DS_LOG(Warn, Ckpt) << ck->path << ": saved by an older dstrain, which did not record its model/optimizer "
                       << "config; resuming from it since its shape matches";
  return ResumeChoice{std::move(ck), ""};
}

// A rank's choice as three numbers that sum exactly: step + 1 (0 = fresh,
// -1 = failed) and its save's digest in two 32-bit halves.
void Encode(const std::optional<LoadedCheckpoint>* mine, double* out) {
  out[0] = !mine ? -1.0 : !*mine ? 0.0 : static_cast<double>((*mine)->meta.step + 1);
  const uint64_t set = mine && *mine && IsSetDigest((**mine).set) ? std::stoull((**mine).set, nullptr, 16) : 0;
  out[1] = static_cast<double>(set >> 32);
  out[2] = static_cast<double>(set & 0xffffffffu);
}

std::string Describe(const double* v) {
  if (v[0] < 0) return "could not load its checkpoint";
  if (v[0] == 0) return "a fresh start";
  const uint64_t set = (static_cast<uint64_t>(v[1]) << 32) | static_cast<uint64_t>(v[2]);
  return fmt::format("step {} (save {:016x})", static_cast<int64_t>(v[0]) - 1, set);
}

}  // namespace

Result<ResumeChoice> FindResume(const ResumeRequest& r) {
  return r.snapshot_dir.empty() ? FromDirectory(r) : FromSnapshot(r);
}

Status AgreeOnResume(const std::optional<LoadedCheckpoint>* mine, Communicator& comm) {
  const int world = comm.size();
  std::vector<double> all(3 * static_cast<size_t>(world), 0.0);
  Encode(mine, &all[3 * static_cast<size_t>(comm.rank())]);
  comm.AllReduceSum(all.data(), all.size());
  for (int r = 0; r < world; ++r) {
    const double* v = &all[3 * static_cast<size_t>(r)];
    if (v[0] < 0) return Status::InvalidArgument(fmt::format("rank {} could not load its checkpoint (its output "
                                                                "says why)", r));
    if (v[0] != all[0] || v[1] != all[1] || v[2] != all[2])
      return Status::InvalidArgument(fmt::format(
          "ranks resumed different checkpoints: rank 0 {}, rank {} {}: refusing to train on a mixture (is the "
          "checkpoint directory the same one on every node?)",
          Describe(all.data()), r, Describe(v)));
  }
  return Status::OK();
}

}  // namespace ds::rt
