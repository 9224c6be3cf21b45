#include "runtime/config/config_yaml.h"

#include <cmath>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds::rt::cfg {

std::string Join(const std::string& path, const std::string& key) {
  if (key.empty()) return path;
  return path.empty() ? key : path + "." + key;
}

std::string Where(const std::string& origin, const YAML::Node& node) {
  if (node.IsDefined() && node.Mark().line >= 0)
    return fmt::format("{}:{}: ", origin, node.Mark().line + 1);
  return origin + ": ";
}

Status RequireMap(const YAML::Node& node, const std::string& path, const std::string& origin) {
  if (!node.IsDefined() || node.IsNull() || node.IsMap()) return Status::OK();
  return Status::InvalidArgument(Where(origin, node) + "'" + path + "' must be a map");
}

Status CheckSection(const YAML::Node& node, const std::string& path, const ConfigSource& source,
                    const std::vector<std::string>& allowed, const std::string& allowed_prefix) {
  DS_RETURN_IF_ERROR(RequireMap(node, path, source.origin));
  return CheckKeys(node, source.file, Join(source.key_path, path), allowed, allowed_prefix);
}

namespace {

Status Expected(const YAML::Node& v, const std::string& what, const std::string& key_path,
                const std::string& origin) {
  const std::string got = v.IsScalar() ? "'" + v.Scalar() + "'" : (v.IsMap() ? "a map" : "a list");
  return Status::InvalidArgument(
      fmt::format("{}'{}' expects {}, got {}", Where(origin, v), key_path, what, got));
}

}  // namespace

Status ReadInt(const YAML::Node& map, const std::string& key, const std::string& path,
               const std::string& origin, int64_t* out) {
  const YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return Status::OK();
  if (v.IsScalar()) {
    if (auto n = ParseInt(v.Scalar())) {
      *out = *n;
      return Status::OK();
    }
    // JSON writers emit 5e8 or 5.0e8 for integers; accept exact integral values.
    try {
      const double d = v.as<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
        *out = static_cast<int64_t>(d);
        return Status::OK();
      }
    } catch (const YAML::Exception&) {
    }
  }
  return Expected(v, "an integer", Join(path, key), origin);
}

Status ReadInt(const YAML::Node& map, const std::string& key, const std::string& path,
               const std::string& origin, int* out) {
  int64_t v = *out;
  DS_RETURN_IF_ERROR(ReadInt(map, key, path, origin, &v));
  if (v < INT32_MIN || v > INT32_MAX)
    return Expected(map[key], "an integer that fits 32 bits", Join(path, key), origin);
  *out = static_cast<int>(v);
  return Status::OK();
}

Status ReadDouble(const YAML::Node& map, const std::string& key, const std::string& path,
                  const std::string& origin, double* out) {
  const YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return Status::OK();
  if (v.IsScalar()) {
    try {
      *out = v.as<double>();
      if (std::isfinite(*out)) return Status::OK();
    } catch (const YAML::Exception&) {
    }
  }
  return Expected(v, "a number", Join(path, key), origin);
}

Status ReadBool(const YAML::Node& map, const std::string& key, const std::string& path,
                const std::string& origin, bool* out) {
  const YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return Status::OK();
  if (v.IsScalar()) {
    try {
      *out = v.as<bool>();
      return Status::OK();
    } catch (const YAML::Exception&) {
    }
  }
  return Expected(v, "true or false", Join(path, key), origin);
}

Status ReadString(const YAML::Node& map, const std::string& key, const std::string& path,
                  const std::string& origin, std::string* out) {
  const YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return Status::OK();
  if (v.IsScalar()) {
    *out = v.Scalar();
    return Status::OK();
  }
  return Expected(v, "a string", Join(path, key), origin);
}

}  // namespace ds::rt::cfg
