// LaunchTree: who starts whose agent under --fanout-tree K, and who takes
// over when an interior node cannot. The nodes form a K-ary tree in
// breadth-first order under the launcher: the launcher starts nodes 0..K-1
// itself; node i, once registered, starts nodes (i+1)K .. (i+1)K+K-1. Each
// such hand-off has a deadline. A child its parent reports it could not
// start (AgentEnded), or one that has not registered by the deadline, goes
// back to the launcher ("direct"), which starts it itself; registered, it
// then starts its own children like any other node, so a failed interior
// node's whole subtree is retried from the launcher one level at a time.
// Pure bookkeeping on times it is given; not thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "common/clock.h"

namespace ds {

class LaunchTree {
 public:
  // `nodes` >= 1, `width` >= 2; `handoff_timeout`: from the hand-off to the
  // child's registration, at most.
  LaunchTree(int nodes, int width, Clock::duration handoff_timeout);

  // The nodes the launcher starts at first (0..K-1).
  std::vector<int> Roots() const;
  // `node`'s children in the tree (whoever ends up starting them).
  std::vector<int> Children(int node) const;
  // `node` and every node below it.
  std::vector<int> Subtree(int node) const;
  // Levels below the launcher (1 when every node is a root).
  int Depth() const;

  // `node` registered: the children it must start now (handed to it, with a
  // deadline at now + handoff_timeout); empty when it has none, or when it
  // registered before (a rejoin).
  std::vector<int> OnRegistered(int node, Clock::time_point now);
  // `parent` says the command starting `child` ended. True when the child
  // has not registered and was still `parent`'s: the launcher starts it now.
  bool OnStartEnded(int parent, int child);
  // Hand-offs past their deadline at `now`, unregistered: the launcher
  // starts them now.
  std::vector<int> Overdue(Clock::time_point now);
  // The earliest hand-off deadline still open; nullopt when none is.
  std::optional<Clock::time_point> NextDeadline() const;

 private:
  enum class State { kWaiting, kHanded, kDirect, kRegistered };
  struct Node {
    State state = State::kWaiting;
    int holder = -1;  // kHanded: the node it was handed to
    Clock::time_point deadline;
  };

  int width_;
  Clock::duration handoff_timeout_;
  std::vector<Node> nodes_;
};

}  // namespace ds
