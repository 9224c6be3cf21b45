#include "runtime/checkpoint/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "checkpoint_format/checkpoint_files.h"
#include "checkpoint_format/checkpoint_format.h"
#include "common/log.h"

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

template <typename T>
void Put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void PutFloats(std::string& out, const std::vector<float>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

std::string ManifestJson(const CheckpointMeta& m, const std::vector<double>& info) {
  std::string shards;
  for (int r = 0; r < m.world_size; ++r) {
    shards += fmt::format("{}    {{\"file\": \"shard_{}.bin\", \"bytes\": {}, \"crc32\": {}}}",
                          r ? ",\n" : "", r, uint64_t(info[3 * r + 1]), uint64_t(info[3 * r + 2]));
  }
  // Nothing in it may differ between ranks: each rank of a snapshot writes
  // its own copy, and the copies must be byte for byte the same (the set of
  // a save is their digest).
  return fmt::format(
      "{{\n  \"format\": 2,\n  \"step\": {},\n  \"applied_steps\": {},\n  \"epoch\": {},\n"
      "  \"sample_position\": {},\n  \"rng\": [\"{}\", \"{}\", \"{}\", \"{}\"],\n"
      "  \"loss_scale\": {},\n  \"scaler_hysteresis\": {},\n  \"scaler_iter\": {},\n"
      "  \"scaler_last_overflow\": {},\n  \"run_id\": \"{}\",\n  \"world_size\": {},\n  \"zero_stage\": {},\n"
      "  \"config_hash\": \"{}\",\n  \"num_params\": {},\n  \"state_slots\": {},\n"
      "  \"shards\": [\n{}\n  ]\n}}\n",
      m.step, m.applied_steps, m.epoch, m.sample_position, m.rng[0], m.rng[1], m.rng[2], m.rng[3],
      m.scaler.scale, m.scaler.cur_hysteresis, m.scaler.cur_iter, m.scaler.last_overflow_iter,
      m.run_id, m.world_size, m.zero_stage, m.config_hash, m.num_params, m.state_slots, shards);
}

std::string EncodeShard(int rank, const ShardState& shard) {
  std::string data;
  EncodeShardInto(rank, shard, &data);
  return data;
}

void EncodeShardHeaderInto(int rank, const ShardState& shard, std::string* out) {
  std::string& data = *out;
  data.assign(ckpt::kShardMagic, 8);
  Put<uint32_t>(data, ckpt::kShardVersion);
  Put<uint32_t>(data, static_cast<uint32_t>(rank));
  Put<uint32_t>(data, static_cast<uint32_t>(shard.segments.size()));
  Put<uint32_t>(data, static_cast<uint32_t>(shard.state.size()));
  for (const Segment& s : shard.segments) {
    Put<uint64_t>(data, s.flat_offset);
    Put<uint64_t>(data, s.len);
  }
}

void EncodeShardInto(int rank, const ShardState& shard, std::string* out) {
  EncodeShardHeaderInto(rank, shard, out);
  std::string& data = *out;
  PutFloats(data, shard.master);
  for (const auto& slot : shard.state) PutFloats(data, slot);
}

std::vector<double> ShareShardInfo(bool ok, const std::string& data, Communicator& comm) {
  std::vector<double> info(3 * comm.size(), 0.0);
  const int rank = comm.rank();
  info[3 * rank] = ok ? 0 : 1;
  info[3 * rank + 1] = static_cast<double>(data.size());
  info[3 * rank + 2] = static_cast<double>(ckpt::Crc32(data));
  comm.AllReduceSum(info.data(), info.size());
  return info;
}

namespace {

// Names of the complete checkpoints of `ckpt` (step directories of this user
// with a manifest), oldest first.
std::vector<std::string> CompleteSteps(const Dir& ckpt) {
  std::vector<std::string> out;
  auto names = ckpt.List();
  if (!names.ok()) return out;
  for (const std::string& name : *names) {  // sorted: zero-padded step numbers sort by step
    if (name.rfind("step_", 0) != 0) continue;
    auto step = ckpt::OpenStepDir(ckpt, name);
    if (step.ok() && step->Lstat("manifest.json")) out.push_back(name);
  }
  return out;
}

void Remove(const Dir& ckpt, const std::string& name) {
  if (Status st = ckpt.RemoveTree(name); !st.ok())
    DS_LOG(Warn, Ckpt) << "cannot prune " << ckpt.PathOf(name) << ": " << st.message();
  else
    DS_LOG(Info, Ckpt) << "pruned " << ckpt.PathOf(name);
}

void Prune(const Dir& ckpt, int keep) {
  const std::vector<std::string> complete = CompleteSteps(ckpt);
  if (keep < 1) keep = 1;
  for (size_t i = 0; i + keep < complete.size(); ++i) Remove(ckpt, complete[i]);
  // Leftovers of interrupted saves older than the newest complete checkpoint.
  auto names = ckpt.List();
  if (complete.empty() || !names.ok()) return;
  for (const std::string& name : *names) {
    if (name.rfind("step_", 0) != 0 || name >= complete.back()) continue;
    auto step = ckpt::OpenStepDir(ckpt, name);
    if (step.ok() && !step->Lstat("manifest.json")) Remove(ckpt, name);
  }
}

}  // namespace

std::string ModelConfigHash(const MlpConfig& model, OptimizerType optimizer) {
  const char* act = model.activation == Activation::kGelu ? "gelu" : "relu";
  const char* opt = optimizer == OptimizerType::kSgd ? "sgd" : optimizer == OptimizerType::kAdam ? "adam" : "adamw";
  return fmt::format("{:08x}", ckpt::Crc32(fmt::format("model {} {}; optimizer {}", fmt::join(model.sizes, ","), act, opt)));
}

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  auto ckpt = ckpt::OpenCheckpointDir(dir);
  if (!ckpt.ok()) return {};
  std::vector<std::string> out;
  for (const std::string& name : CompleteSteps(*ckpt)) out.push_back(ckpt->PathOf(name));
  return out;
}

Status SaveCheckpoint(const std::string& dir, const CheckpointMeta& meta, const ShardState& shard,
                      Communicator& comm, int keep) {
  const int rank = comm.rank(), world = comm.size();
  const fs::path step_dir = fs::path(dir) / ckpt::StepDirName(meta.step);
  Result<Dir> ckpt = ckpt::MakeCheckpointDir(dir);
  Result<Dir> step = ckpt.ok() ? ckpt::MakeStepDir(*ckpt, ckpt::StepDirName(meta.step)) : Result<Dir>(ckpt.status());
  Status st = step.status();

  const std::string data = EncodeShard(rank, shard);
  if (st.ok()) st = step->WriteFile(fmt::format("shard_{}.bin", rank), data, ckpt::kCheckpointFileMode);
  if (!st.ok()) DS_LOG(Warn, Ckpt) << st.message();

  // Everyone learns every shard's outcome, size and checksum.
  const std::vector<double> info = ShareShardInfo(st.ok(), data, comm);
  if (!st.ok()) return st;
  for (int r = 0; r < world; ++r)
    if (info[3 * r] != 0)
      return Status::IOError(fmt::format("checkpoint {}: rank {} could not write its shard",
                                         step_dir.string(), r));

  double failed = 0;
  Status ms;
  if (rank == 0) {
    CheckpointMeta m = meta;
    m.world_size = world;
    ms = step->WriteFile("manifest.json", ManifestJson(m, info), ckpt::kCheckpointFileMode);
    if (!ms.ok()) {
      DS_LOG(Warn, Ckpt) << ms.message();
      failed = 1;
    } else {
      Prune(*ckpt, keep);
      DS_LOG(Info, Ckpt) << "saved " << step_dir.string();
    }
  }
  comm.AllReduceSum(&failed, 1);
  if (!ms.ok()) return ms;
  if (failed != 0)
    return Status::IOError(fmt::format("checkpoint {}: rank 0 could not write manifest.json",
                                       step_dir.string()));
  return Status::OK();
}

}  // namespace ds::rt
