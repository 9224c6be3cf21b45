// The one unknown-key check of every YAML (and JSON) config that dslaunch
// and dstrain read: the job file (launcher/config/job_spec.cc), its
// trainer: section and ds_config.json (runtime/config). One message format,
// placed by file, line and column and naming the map's key path:
//   train.yaml:4:7: unknown key 'stag' in trainer.config.zero_optimization (did you mean 'stage'?)
// Pure functions; no yaml-cpp in this header (dslaunch's headers stay free of it).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace YAML {
class Node;
}

namespace ds::rt::cfg {

// Where a parsed map comes from.
struct ConfigSource {
  std::string origin;    // starts messages other than unknown keys: "ds.json",
                         // "train.yaml trainer.config"
  std::string file;      // the file holding the keys, for file:line:col
  std::string key_path;  // the map's key path in that file: "" at the top,
                         // "trainer.config" for a ds_config inline in a job file
};

// Checks that every key of `map` is a scalar, appears once and is one of
// `allowed` (or starts with `allowed_prefix` when that is not empty). OK for
// a node that is not a map (its caller says what it expected). The first
// offender is InvalidArgument:
//   "<file>:<line>:<col>: unknown key '<key>' in <path> (did you mean '<near>'?)"
//     (" in <path>" only below the top, the hint only for a near miss)
//   "<file>:<line>:<col>: duplicate key '<key>'"
//   "<file>:<line>:<col>: expected a key name in <path>"
Status CheckKeys(const YAML::Node& map, const std::string& file, const std::string& path,
                 const std::vector<std::string>& allowed, const std::string& allowed_prefix = "");
// Every offender CheckKeys would name, in the map's order, at most `max`.
std::vector<Status> KeyProblems(const YAML::Node& map, const std::string& file, const std::string& path,
                                const std::vector<std::string>& allowed, size_t max);

// "<file>:<line>:<col>: " for a node with a position (1-based), else "<file>: ".
std::string Position(const std::string& file, const YAML::Node& node);

}  // namespace ds::rt::cfg
