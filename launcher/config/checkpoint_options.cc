#include "launcher/config/checkpoint_options.h"

namespace ds {

bool HasNodePlaceholder(const std::string& dir) {
  return dir.find("{host}") != std::string::npos || dir.find("{node}") != std::string::npos;
}

bool CheckpointOptions::SharedDir() const { return shared.value_or(!HasNodePlaceholder(dir)); }

int CheckpointOptions::Replicas(int nodes) const {
  if (replicas) return *replicas;
  return !SharedDir() && nodes > 1 ? 1 : 0;
}

bool CheckpointOptions::Snapshots(int nodes) const { return !dir.empty() && (!SharedDir() || Replicas(nodes) > 0); }

std::string ExpandCheckpointDir(const std::string& dir, const std::string& host, int node) {
  std::string out;
  for (size_t i = 0; i < dir.size();) {
    if (dir.compare(i, 6, "{host}") == 0) {
      out += host;
      i += 6;
    } else if (dir.compare(i, 6, "{node}") == 0) {
      out += std::to_string(node);
      i += 6;
    } else {
      out += dir[i++];
    }
  }
  return out;
}

std::vector<std::string> CheckpointWarnings(const CheckpointOptions& ck, int nodes) {
  std::vector<std::string> out;
  if (ck.dir.empty() || nodes < 2) return out;
  const int r = ck.Replicas(nodes);
  if (!ck.SharedDir() && r == 0)
    out.push_back("checkpoint.dir " + ck.dir + " is per node (not shared) and checkpoint.replicas is 0: a lost "
                  "node's shards are lost with it, and the job resumes from the newest step the survivors still "
                  "hold (or from scratch)");
  if (r >= nodes)
    out.push_back("checkpoint.replicas " + std::to_string(r) + ": only " + std::to_string(nodes - 1) +
                  " other node" + (nodes == 2 ? "" : "s") + "; each shard gets " + std::to_string(nodes - 1) +
                  " cop" + (nodes == 2 ? "y" : "ies"));
  return out;
}

}  // namespace ds
