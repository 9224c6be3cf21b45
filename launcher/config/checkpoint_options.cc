// TEMPORARY (replaced by the ckpt-config branch).
#include "launcher/config/checkpoint_options.h"

namespace ds {
namespace {
bool HasPlaceholder(const std::string& d) { return d.find("{host}") != std::string::npos || d.find("{node}") != std::string::npos; }
}
bool CheckpointOptions::SharedDir() const { return shared ? *shared : !HasPlaceholder(dir); }
int CheckpointOptions::Replicas(int nodes) const { return replicas ? *replicas : (!SharedDir() && nodes > 1 ? 1 : 0); }
bool CheckpointOptions::Snapshots(int nodes) const { return !dir.empty() && (!SharedDir() || Replicas(nodes) > 0); }
std::string ExpandCheckpointDir(const std::string& dir, const std::string& host, int node) {
  std::string out;
  for (size_t i = 0; i < dir.size();) {
    if (dir.compare(i, 6, "{host}") == 0) { out += host; i += 6; }
    else if (dir.compare(i, 6, "{node}") == 0) { out += std::to_string(node); i += 6; }
    else out += dir[i++];
  }
  return out;
}
}  // namespace ds
