#include "runtime/config/yaml_keys.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/strings.h"

namespace ds::rt::cfg {

std::string Position(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return file + ": ";
  return fmt::format("{}:{}:{}: ", file, m.line + 1, m.column + 1);
}

namespace {

// The offenders among `map`'s keys, at most `max`.
std::vector<Status> Offenders(const YAML::Node& map, const std::string& file, const std::string& path,
                              const std::vector<std::string>& allowed, const std::string& allowed_prefix, size_t max) {
  std::vector<Status> out;
  if (!map.IsDefined() || !map.IsMap()) return out;
  const std::string in = path.empty() ? "" : " in " + path;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (out.size() >= max) break;
    if (!kv.first.IsScalar()) {
      out.push_back(Status::InvalidArgument(Position(file, kv.first) + "expected a key name" + in));
      continue;
    }
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      out.push_back(Status::InvalidArgument(Position(file, kv.first) + "duplicate key '" + key + "'"));
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    if (!allowed_prefix.empty() && StartsWith(key, allowed_prefix)) continue;
    out.push_back(Status::InvalidArgument(Position(file, kv.first) + "unknown key '" + key + "'" + in +
                                          DidYouMeanHint(key, allowed)));
  }
  return out;
}

}  // namespace

Status CheckKeys(const YAML::Node& map, const std::string& file, const std::string& path,
                 const std::vector<std::string>& allowed, const std::string& allowed_prefix) {
  std::vector<Status> first = Offenders(map, file, path, allowed, allowed_prefix, 1);
  return first.empty() ? Status::OK() : first[0];
}

std::vector<Status> KeyProblems(const YAML::Node& map, const std::string& file, const std::string& path,
                                const std::vector<std::string>& allowed, size_t max) {
  return Offenders(map, file, path, allowed, "", max);
}

}  // namespace ds::rt::cfg
