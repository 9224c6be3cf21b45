#include "runtime/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/log.h"

namespace ds::rt {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'D', 'S', 'C', 'K', 'S', 'H', 'D', '1'};
constexpr uint32_t kVersion = 1;

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

uint32_t Crc32(const std::string& data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
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

// Reads a whole file; nullopt if it cannot be opened.
std::optional<std::string> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Parses and verifies one checkpoint directory; an error says why it is unusable.
Result<LoadedCheckpoint> LoadOne(const fs::path& path, uint64_t num_params, int state_slots) {
  auto text = ReadAll(path / "manifest.json");
  if (!text) return Status::NotFound("no manifest.json (incomplete)");
  LoadedCheckpoint out;
  out.path = path.string();
  CheckpointMeta& m = out.meta;
  YAML::Node shards;
  try {
    YAML::Node n = YAML::Load(*text);
    if (n["format"].as<int>() != 1) return Status::InvalidArgument("unknown format");
    m.step = n["step"].as<int64_t>();
    m.applied_steps = n["applied_steps"].as<int64_t>();
    m.epoch = n["epoch"].as<int64_t>();
    m.sample_position = n["sample_position"].as<int64_t>();
    for (int i = 0; i < 4; ++i) m.rng[i] = std::stoull(n["rng"][i].as<std::string>());
    m.scaler.scale = n["loss_scale"].as<double>();
    m.scaler.cur_hysteresis = n["scaler_hysteresis"].as<int>();
    m.scaler.cur_iter = n["scaler_iter"].as<int64_t>();
    m.scaler.last_overflow_iter = n["scaler_last_overflow"].as<int64_t>();
    m.world_size = n["world_size"].as<int>();
    m.zero_stage = n["zero_stage"].as<int>();
    m.config_hash = n["config_hash"].as<std::string>();
    m.num_params = n["num_params"].as<uint64_t>();
    m.state_slots = n["state_slots"].as<int>();
    shards = n["shards"];
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("manifest.json: {}", e.what()));
  }
  if (m.num_params != num_params)
    return Status::InvalidArgument(
        fmt::format("saved for {} parameters, the model has {}", m.num_params, num_params));
  if (m.state_slots != state_slots)
    return Status::InvalidArgument(fmt::format(
        "saved with {} optimizer state arrays, this optimizer has {}", m.state_slots, state_slots));
  if (!shards.IsSequence() || static_cast<int>(shards.size()) != m.world_size)
    return Status::InvalidArgument("manifest lists the wrong number of shards");
  out.master.assign(num_params, 0.f);
  out.state.assign(state_slots, std::vector<float>(num_params, 0.f));
  uint64_t covered = 0;
  for (const auto& s : shards) {
    const std::string file = s["file"].as<std::string>();
    auto data = ReadAll(path / file);
    if (!data) return Status::NotFound(file + ": missing");
    if (data->size() != s["bytes"].as<uint64_t>())
      return Status::InvalidArgument(fmt::format("{}: {} bytes, manifest says {}", file,
                                                 data->size(), s["bytes"].as<uint64_t>()));
    if (Crc32(*data) != s["crc32"].as<uint32_t>())
      return Status::InvalidArgument(file + ": crc32 mismatch (corrupt)");
    const char* p = data->data();
    const char* end = p + data->size();
    auto take = [&](void* dst, size_t n) {
      if (static_cast<size_t>(end - p) < n) return false;
      std::memcpy(dst, p, n);
      p += n;
      return true;
    };
    char magic[8];
    uint32_t version, rank, nseg, slots;
    if (!take(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !take(&version, 4) ||
        version != kVersion || !take(&rank, 4) || !take(&nseg, 4) || !take(&slots, 4) ||
        static_cast<int>(slots) != state_slots)
      return Status::InvalidArgument(file + ": bad header");
    std::vector<std::pair<uint64_t, uint64_t>> segs(nseg);
    uint64_t total = 0;
    for (auto& [off, len] : segs) {
      if (!take(&off, 8) || !take(&len, 8) || off + len > num_params)
        return Status::InvalidArgument(file + ": bad segment");
      total += len;
    }
    for (int k = -1; k < state_slots; ++k) {
      std::vector<float>& dst = k < 0 ? out.master : out.state[k];
      for (auto [off, len] : segs)
        if (!take(dst.data() + off, len * sizeof(float)))
          return Status::InvalidArgument(file + ": truncated");
    }
    covered += total;
  }
  if (covered != num_params)
    return Status::InvalidArgument(
        fmt::format("shards cover {} of {} parameters", covered, num_params));
  return out;
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

  std::string data(kMagic, 8);
  Put<uint32_t>(data, kVersion);
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

std::optional<LoadedCheckpoint> LoadNewestCheckpoint(const std::string& dir, uint64_t num_params,
                                                     int state_slots) {
  std::vector<fs::path> candidates;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("step_", 0) == 0) candidates.push_back(e.path());
  std::sort(candidates.rbegin(), candidates.rend());
  for (const auto& c : candidates) {
    auto loaded = LoadOne(c, num_params, state_slots);
    if (loaded.ok()) return std::move(loaded).value();
    DS_LOG(Warn, Ckpt) << "skipping checkpoint " << c.string() << ": "
                       << loaded.status().message();
  }
  return std::nullopt;
}

}  // namespace ds::rt
