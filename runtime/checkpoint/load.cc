// Loading a checkpoint (the reading half of checkpoint.h): the manifest,
// then every shard verified against it (size, crc32, header) and scattered
// into the full flat vectors, whatever world size and stage saved them.
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "checkpoint_format/checkpoint_format.h"
#include "common/log.h"
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/checkpoint/manifest.h"
#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

// The saved shape must be this model's and optimizer's.
Status CheckShape(const CheckpointMeta& m, uint64_t num_params, int state_slots) {
  if (m.num_params != num_params)
    return Status::InvalidArgument(
        fmt::format("saved for {} parameters, the model has {}", m.num_params, num_params));
  if (m.state_slots != state_slots)
    return Status::InvalidArgument(fmt::format(
        "saved with {} optimizer state arrays, this optimizer has {}", m.state_slots, state_slots));
  return Status::OK();
}

// Reads fixed-size fields off the front of a shard's bytes.
class Cursor {
 public:
  explicit Cursor(const std::string& data) : p_(data.data()), end_(p_ + data.size()) {}
  bool Take(void* dst, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    std::memcpy(dst, p_, n);
    p_ += n;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

// Shard `file` (already checked against the manifest) into out->master and
// out->state; *covered grows by the parameters it holds.
Status ScatterShard(const std::string& file, const std::string& data, uint64_t num_params,
                    int state_slots, LoadedCheckpoint* out, uint64_t* covered) {
  Cursor in(data);
  char magic[8];
  uint32_t version, rank, nseg, slots;
  if (!in.Take(magic, 8) || std::memcmp(magic, ckpt::kShardMagic, 8) != 0 || !in.Take(&version, 4) ||
      version != ckpt::kShardVersion || !in.Take(&rank, 4) || !in.Take(&nseg, 4) ||
      !in.Take(&slots, 4) || static_cast<int>(slots) != state_slots)
    return Status::InvalidArgument(file + ": bad header");
  std::vector<std::pair<uint64_t, uint64_t>> segs(nseg);
  uint64_t total = 0;
  for (auto& [off, len] : segs) {
    if (!in.Take(&off, 8) || !in.Take(&len, 8) || off + len > num_params)
      return Status::InvalidArgument(file + ": bad segment");
    total += len;
  }
  for (int k = -1; k < state_slots; ++k) {
    std::vector<float>& dst = k < 0 ? out->master : out->state[k];
    for (auto [off, len] : segs)
      if (!in.Take(dst.data() + off, len * sizeof(float)))
        return Status::InvalidArgument(file + ": truncated");
  }
  *covered += total;
  return Status::OK();
}

// One shard listed in the manifest: present, of the recorded size and crc32.
Status LoadShard(const Dir& dir, const ManifestShard& s, uint64_t num_params,
                 int state_slots, LoadedCheckpoint* out, uint64_t* covered) {
  const std::string& file = s.file;
  auto data = dir.ReadFile(file);
  if (!data.ok()) return data.status();
  if (data->size() != s.bytes)
    return Status::InvalidArgument(
        fmt::format("{}: {} bytes, manifest says {}", file, data->size(), s.bytes));
  if (ckpt::Crc32(*data) != s.crc32)
    return Status::InvalidArgument(file + ": crc32 mismatch (corrupt)");
  return ScatterShard(file, *data, num_params, state_slots, out, covered);
}

// The checkpoint in the step directory `dir`, verified.
Result<LoadedCheckpoint> LoadStep(const Dir& dir, uint64_t num_params, int state_slots) {
  auto text = dir.ReadFile("manifest.json");
  if (!text.ok() && text.status().code() == Status::Code::kNotFound)
    return Status::NotFound("no manifest.json (incomplete)");
  if (!text.ok()) return text.status();
  auto manifest = ParseManifest(*text);
  if (!manifest.ok()) return manifest.status();
  LoadedCheckpoint out;
  out.path = dir.path();
  out.set = ManifestDigest(*text);
  out.meta = manifest->meta;
  DS_RETURN_IF_ERROR(CheckShape(out.meta, num_params, state_slots));
  out.master.assign(num_params, 0.f);
  out.state.assign(state_slots, std::vector<float>(num_params, 0.f));
  uint64_t covered = 0;
  for (const ManifestShard& s : manifest->shards)
    DS_RETURN_IF_ERROR(LoadShard(dir, s, num_params, state_slots, &out, &covered));
  if (covered != num_params)
    return Status::InvalidArgument(
        fmt::format("shards cover {} of {} parameters", covered, num_params));
  return out;
}

}  // namespace

Result<LoadedCheckpoint> LoadCheckpointDir(const std::string& step_dir, uint64_t num_params, int state_slots) {
  // Both the directory holding it and the step directory are opened and checked.
  const fs::path path = fs::path(step_dir).lexically_normal();
  DS_ASSIGN_OR_RETURN(Dir parent, ckpt::OpenCheckpointDir(path.has_parent_path() ? path.parent_path().string() : "."));
  DS_ASSIGN_OR_RETURN(Dir step, ckpt::OpenStepDir(parent, path.filename().string()));
  return LoadStep(step, num_params, state_slots);
}

Result<std::optional<LoadedCheckpoint>> LoadNewestCheckpoint(const std::string& dir,
                                                             uint64_t num_params, int state_slots) {
  auto ckpt = ckpt::OpenCheckpointDir(dir);
  if (ckpt.status().code() == Status::Code::kNotFound) return std::optional<LoadedCheckpoint>();
  if (!ckpt.ok()) return ckpt.status();
  auto names = ckpt->List();
  if (!names.ok()) return names.status();
  for (auto name = names->rbegin(); name != names->rend(); ++name) {  // newest first
    if (name->rfind("step_", 0) != 0) continue;
    auto step = ckpt::OpenStepDir(*ckpt, *name);
    auto loaded = step.ok() ? LoadStep(*step, num_params, state_slots) : Result<LoadedCheckpoint>(step.status());
    if (loaded.ok()) return std::optional<LoadedCheckpoint>(std::move(loaded).value());
    DS_LOG(Warn, Ckpt) << "skipping checkpoint " << ckpt->PathOf(*name) << ": " << loaded.status().message();
  }
  return std::optional<LoadedCheckpoint>();
}

}  // namespace ds::rt
