// Where a job's checkpoints live and how they survive a lost node: the job
// file's `checkpoint_dir:` (a shorthand) or `checkpoint:` section.
//
//   checkpoint:
//     dir: /local/ckpt/{host}   # {host}: the node's host name; {node}: its index
//                               # in the hostfile selection (stable across restarts)
//     shared: false             # do all nodes see the same directory? default: true,
//                               # false when dir holds {host} or {node}
//     replicas: 1               # copies of each shard in other nodes' agents (ring
//                               # order); default 1 when not shared and > 1 node, else 0
//     keep: 2                   # newest snapshots each agent keeps (memory and disk)
//
// With shared: true and replicas: 0 nothing changes from plain checkpoints
// (the workers write `dir` themselves). Otherwise snapshots are on: workers
// hand their shards to their agent, which keeps them in memory, writes them
// to the node's `dir` and replicates them (docs/usage.md, checkpoint_format/checkpoint_format.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ds {

inline constexpr int kMaxCheckpointReplicas = 16;

struct CheckpointOptions {
  std::string dir;                // "" = no checkpoints; may hold {host} and {node}
  std::optional<bool> shared;     // as written; nullopt = not set
  std::optional<int> replicas;    // as written; nullopt = not set
  int keep = 2;                   // >= 1

  // The resolved values for a job of `nodes` nodes (see above).
  bool SharedDir() const;
  int Replicas(int nodes) const;
  // Snapshots owned by the agents (not shared, or replicas > 0), for a job
  // with a checkpoint dir.
  bool Snapshots(int nodes) const;
};

// `dir` with {host} and {node} replaced.
std::string ExpandCheckpointDir(const std::string& dir, const std::string& host, int node);
bool HasNodePlaceholder(const std::string& dir);

// What dslaunch warns about at start for a job of `nodes` nodes: a per-node
// directory without replicas (a lost node's shards are lost), more replicas
// than other nodes.
std::vector<std::string> CheckpointWarnings(const CheckpointOptions& ck, int nodes);

}  // namespace ds
