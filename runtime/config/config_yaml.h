// Helpers shared by the ds_config and trainer_config parsers: typed reads of
// YAML scalars and the section check (a map with known keys), with errors
// that name "<origin>:<line>: <key path>" and say what was expected; unknown
// keys are reported by yaml_keys.h. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/status.h"
#include "runtime/config/yaml_keys.h"

namespace ds::rt::cfg {

// "<origin>:<line>: " for a node (1-based line), or "<origin>: " without one.
std::string Where(const std::string& origin, const YAML::Node& node);

// Checks that the section `path` of `source` (node) is a map (RequireMap)
// whose keys are known (CheckKeys of yaml_keys.h, under source.key_path).
Status CheckSection(const YAML::Node& node, const std::string& path, const ConfigSource& source,
                    const std::vector<std::string>& allowed,
                    const std::string& allowed_prefix = "");

// Requires a map (or null/absent, which is accepted as empty).
Status RequireMap(const YAML::Node& node, const std::string& path, const std::string& origin);

// Typed reads of node[key] into *out when present; errors name the key path.
Status ReadInt(const YAML::Node& map, const std::string& key, const std::string& path,
               const std::string& origin, int64_t* out);
Status ReadInt(const YAML::Node& map, const std::string& key, const std::string& path,
               const std::string& origin, int* out);
Status ReadDouble(const YAML::Node& map, const std::string& key, const std::string& path,
                  const std::string& origin, double* out);
Status ReadBool(const YAML::Node& map, const std::string& key, const std::string& path,
                const std::string& origin, bool* out);
Status ReadString(const YAML::Node& map, const std::string& key, const std::string& path,
                  const std::string& origin, std::string* out);

// "a.b"; "b" when a is empty, "a" when b is.
std::string Join(const std::string& path, const std::string& key);

}  // namespace ds::rt::cfg
