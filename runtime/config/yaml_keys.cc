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

Status CheckKeys(const YAML::Node& map, const std::string& file, const std::string& path,
                 const std::vector<std::string>& allowed, const std::string& allowed_prefix) {
  if (!map.IsDefined() || !map.IsMap()) return Status::OK();
  const std::string in = path.empty() ? "" : " in " + path;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      return Status::InvalidArgument(Position(file, kv.first) + "expected a key name" + in);
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second)
      return Status::InvalidArgument(Position(file, kv.first) + "duplicate key '" + key + "'");
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    if (!allowed_prefix.empty() && StartsWith(key, allowed_prefix)) continue;
    return Status::InvalidArgument(Position(file, kv.first) + "unknown key '" + key + "'" + in +
                                   DidYouMeanHint(key, allowed));
  }
  return Status::OK();
}

}  // namespace ds::rt::cfg
