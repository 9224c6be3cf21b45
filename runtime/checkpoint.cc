#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/log.h"
#include "runtime/checkpoint_format.h"

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

// Writes `data` to path.tmp, fsyncs, renames to path, fsyncs the directory.
Status WriteDurably(const fs::path& path, const std::string& data) {
  const std::string tmp = path.string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("{}: cannot create: {}", tmp, strerror(errno)));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status st = Status::IOError(fmt::format("{}: write: {}", tmp, strerror(errno)));
      ::close(fd);
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return Status::IOError(fmt::format("{}: fsync: {}", tmp, strerror(errno)));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::IOError(fmt::format("{}: rename: {}", path.string(), strerror(errno)));
  int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) { ::fsync(dfd); ::close(dfd); }
  return Status::OK();
}

template <typename T>
void Put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void PutFloats(std::string& out, const std::vector<float>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::string StepDirName(int64_t step) { return fmt::format("step_{:08d}", step); }

std::string ManifestJson(const CheckpointMeta& m, const std::vector<double>& info) {
  std::string shards;
  for (int r = 0; r < m.world_size; ++r) {
    shards += fmt::format("{}    {{\"file\": \"shard_{}.bin\", \"bytes\": {}, \"crc32\": {}}}",
                          r ? ",\n" : "", r, uint64_t(info[3 * r + 1]), uint64_t(info[3 * r + 2]));
  }
  return fmt::format(
      "{{\n  \"format\": 1,\n  \"step\": {},\n  \"applied_steps\": {},\n  \"epoch\": {},\n"
      "  \"sample_position\": {},\n  \"rng\": [\"{}\", \"{}\", \"{}\", \"{}\"],\n"
      "  \"loss_scale\": {},\n  \"scaler_hysteresis\": {},\n  \"scaler_iter\": {},\n"
      "  \"scaler_last_overflow\": {},\n  \"world_size\": {},\n  \"zero_stage\": {},\n"
      "  \"config_hash\": \"{}\",\n  \"num_params\": {},\n  \"state_slots\": {},\n"
      "  \"shards\": [\n{}\n  ]\n}}\n",
      m.step, m.applied_steps, m.epoch, m.sample_position, m.rng[0], m.rng[1], m.rng[2], m.rng[3],
      m.scaler.scale, m.scaler.cur_hysteresis, m.scaler.cur_iter, m.scaler.last_overflow_iter,
      m.world_size, m.zero_stage, m.config_hash, m.num_params, m.state_slots, shards);
}

void Prune(const fs::path& dir, int keep) {
  auto complete = ListCheckpoints(dir.string());
  if (keep < 1) keep = 1;
  std::error_code ec;
  for (size_t i = 0; i + keep < complete.size(); ++i) {
    fs::remove_all(complete[i], ec);
    DS_LOG(Info, Ckpt) << "pruned " << complete[i];
  }
  // Leftovers of interrupted saves older than the newest complete checkpoint.
  if (complete.empty()) return;
  const std::string newest = fs::path(complete.back()).filename().string();
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) == 0 && name < newest && !fs::exists(e.path() / "manifest.json"))
      fs::remove_all(e.path(), ec);
  }
}

}  // namespace

std::string ConfigHash(const std::string& text) {
  return fmt::format("{:08x}", Crc32(text));
}

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) == 0 && fs::exists(e.path() / "manifest.json"))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());  // zero-padded step numbers sort by step
  return out;
}

Status SaveCheckpoint(const std::string& dir, const CheckpointMeta& meta, const ShardState& shard,
                      Communicator& comm, int keep) {
  const int rank = comm.rank(), world = comm.size();
  const fs::path step_dir = fs::path(dir) / StepDirName(meta.step);
  std::error_code ec;
  fs::create_directories(step_dir, ec);

  std::string data(kShardMagic, 8);
  Put<uint32_t>(data, kShardVersion);
  Put<uint32_t>(data, static_cast<uint32_t>(rank));
  Put<uint32_t>(data, static_cast<uint32_t>(shard.segments.size()));
  Put<uint32_t>(data, static_cast<uint32_t>(shard.state.size()));
  for (const Segment& s : shard.segments) {
    Put<uint64_t>(data, s.flat_offset);
    Put<uint64_t>(data, s.len);
  }
  PutFloats(data, shard.master);
  for (const auto& st : shard.state) PutFloats(data, st);
  Status st = ec ? Status::IOError(fmt::format("{}: {}", step_dir.string(), ec.message()))
                 : WriteDurably(step_dir / fmt::format("shard_{}.bin", rank), data);
  if (!st.ok()) DS_LOG(Warn, Ckpt) << st.message();

  // Everyone learns every shard's outcome, size and checksum.
  std::vector<double> info(3 * world, 0.0);
  info[3 * rank] = st.ok() ? 0 : 1;
  info[3 * rank + 1] = static_cast<double>(data.size());
  info[3 * rank + 2] = static_cast<double>(Crc32(data));
  comm.AllReduceSum(info.data(), info.size());
  for (int r = 0; r < world; ++r)
    if (info[3 * r] != 0)
      return Status::IOError(fmt::format("checkpoint {}: rank {} could not write its shard",
                                         step_dir.string(), r));

  double failed = 0;
  if (rank == 0) {
    CheckpointMeta m = meta;
    m.world_size = world;
    Status ms = WriteDurably(step_dir / "manifest.json", ManifestJson(m, info));
    if (!ms.ok()) {
      DS_LOG(Warn, Ckpt) << ms.message();
      failed = 1;
    } else {
      Prune(dir, keep);
      DS_LOG(Info, Ckpt) << "saved " << step_dir.string();
    }
  }
  comm.AllReduceSum(&failed, 1);
  if (failed != 0)
    return Status::IOError(fmt::format("checkpoint {}: rank 0 could not write manifest.json",
                                       step_dir.string()));
  return Status::OK();
}

}  // namespace ds::rt
