#include "runtime/checkpoint/manifest.h"

#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "wire/snapshot_handoff.h"

namespace ds::rt {
namespace {

// The whole of `s` as an integer of type T in [min, max].
template <typename T>
bool ToInteger(const std::string& s, T min, T max, T* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size() && *v >= min && *v <= max;
}

// Typed fields of one map of the manifest. The first error wins and names
// the field by its path ("shards[1].bytes"); later reads then return 0.
class Fields {
 public:
  Fields(const YAML::Node& map, std::string prefix, Status* error)
      : map_(map), prefix_(std::move(prefix)), error_(error) {}

  int64_t Int(const char* key, int64_t min, int64_t max = std::numeric_limits<int64_t>::max()) {
    return Integer<int64_t>(key, min, max);
  }
  uint64_t Uint(const char* key, uint64_t max = std::numeric_limits<uint64_t>::max()) {
    return Integer<uint64_t>(key, 0, max);
  }
  double Positive(const char* key) {
    const std::string* s = Scalar(key);
    if (!s) return 0;
    double v = 0;
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || end != s->data() + s->size() || !std::isfinite(v) || v <= 0)
      Fail(fmt::format("'{}{}': expected a positive number, got '{}'", prefix_, key, *s));
    return v;
  }
  std::string Str(const char* key) {
    const std::string* s = Scalar(key);
    return s ? *s : std::string();
  }
  const YAML::Node Node(const char* key) {
    if (!error_->ok()) return YAML::Node();
    const YAML::Node v = map_[key];
    if (!v) Fail(fmt::format("'{}{}' is missing", prefix_, key));
    return v;
  }
  void Fail(const std::string& what) {
    if (error_->ok()) *error_ = Status::InvalidArgument("manifest.json: " + what);
  }

 private:
  const std::string* Scalar(const char* key) {
    const YAML::Node v = Node(key);
    if (!error_->ok()) return nullptr;
    if (!v.IsScalar()) {
      Fail(fmt::format("'{}{}': expected a value, got a list or map", prefix_, key));
      return nullptr;
    }
    scalar_ = v.Scalar();
    return &scalar_;
  }
  template <typename T>
  T Integer(const char* key, T min, T max) {
    const std::string* s = Scalar(key);
    if (!s) return 0;
    T v = 0;
    if (!ToInteger(*s, min, max, &v)) {
      std::string range = max == std::numeric_limits<T>::max() ? fmt::format(">= {}", min)
                                                               : fmt::format("{}..{}", min, max);
      Fail(fmt::format("'{}{}': expected an integer {}, got '{}'", prefix_, key, range, *s));
      return 0;
    }
    return v;
  }

  const YAML::Node map_;
  std::string prefix_;
  Status* error_;
  std::string scalar_;
};

void ReadMeta(Fields& f, CheckpointMeta* m) {
  const int64_t format = f.Int("format", 0);
  if (format != 1 && format != 2) f.Fail(fmt::format("'format' is {}, this dstrain reads formats 1 and 2", format));
  m->step = f.Int("step", 0);
  m->applied_steps = f.Int("applied_steps", 0);
  m->epoch = f.Int("epoch", 0);
  m->sample_position = f.Int("sample_position", 0);
  const YAML::Node rng = f.Node("rng");
  bool four = rng.IsSequence() && rng.size() == 4;
  for (size_t i = 0; four && i < 4; ++i)
    if (!rng[i].IsScalar() ||
        !ToInteger(rng[i].Scalar(), uint64_t{0}, ~uint64_t{0}, &m->rng[i]))
      four = false;
  if (rng && !four) f.Fail("'rng': expected a list of 4 unsigned 64-bit integers");
  m->scaler.scale = f.Positive("loss_scale");
  m->scaler.cur_hysteresis = static_cast<int>(f.Int("scaler_hysteresis", 0, 1 << 30));
  m->scaler.cur_iter = f.Int("scaler_iter", 0);
  m->scaler.last_overflow_iter = f.Int("scaler_last_overflow", -1);
  if (format == 2) m->run_id = f.Str("run_id");
  m->world_size = static_cast<int>(f.Int("world_size", 1, 1 << 20));
  m->zero_stage = static_cast<int>(f.Int("zero_stage", 0, 3));
  m->config_hash = f.Str("config_hash");
  if (format == 1) m->config_hash.clear();  // a hash of the whole config text: not comparable
  if (format == 2 && !m->run_id.empty() && !IsRunId(m->run_id))
    f.Fail(fmt::format("'run_id': expected 1 to 32 hex digits, got '{}'", m->run_id));
  if (format == 2 && !m->config_hash.empty() && !IsRunId(m->config_hash))  // the same shape: hex digits
    f.Fail(fmt::format("'config_hash': expected hex digits or \"\", got '{}'", m->config_hash));
  m->num_params = f.Uint("num_params");
  m->state_slots = static_cast<int>(f.Int("state_slots", 0, 16));
}

void ReadShards(Fields& f, int world_size, std::vector<ManifestShard>* shards, Status* error) {
  const YAML::Node list = f.Node("shards");
  if (!error->ok()) return;
  if (!list.IsSequence() || static_cast<int64_t>(list.size()) != world_size)
    return f.Fail(fmt::format("'shards': expected a list of world_size = {} shards", world_size));
  for (int r = 0; r < world_size && error->ok(); ++r) {
    const std::string at = fmt::format("shards[{}]", r);
    if (!list[r].IsMap()) return f.Fail(fmt::format("'{}': expected a map", at));
    Fields s(list[r], at + ".", error);
    ManifestShard shard{s.Str("file"), s.Uint("bytes"),
                        static_cast<uint32_t>(s.Uint("crc32", 0xffffffffu))};
    const std::string expected = fmt::format("shard_{}.bin", r);
    if (error->ok() && shard.file != expected)
      return f.Fail(fmt::format("'{}.file' is '{}', expected '{}'", at, shard.file, expected));
    shards->push_back(std::move(shard));
  }
}

}  // namespace

Result<Manifest> ParseManifest(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("manifest.json:{}:{}: YAML syntax error: {}",
                                               e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) return Status::InvalidArgument("manifest.json: expected a JSON object");
  Status error;
  Manifest m;
  try {  // the reads above check before they access; this only guards yaml-cpp itself
    Fields f(root, "", &error);
    ReadMeta(f, &m.meta);
    if (error.ok()) ReadShards(f, m.meta.world_size, &m.shards, &error);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("manifest.json: {}", e.what()));
  }
  if (!error.ok()) return error;
  return m;
}

}  // namespace ds::rt
