#include "launcher/fleet/launch_tree.h"

#include <algorithm>

namespace ds {

LaunchTree::LaunchTree(int nodes, int width, Clock::duration handoff_timeout)
    : width_(std::max(width, 2)), handoff_timeout_(handoff_timeout), nodes_(static_cast<size_t>(std::max(nodes, 0))) {
  for (int n : Roots()) nodes_[n].state = State::kDirect;
}

std::vector<int> LaunchTree::Roots() const { return Children(-1); }

std::vector<int> LaunchTree::Children(int node) const {
  std::vector<int> out;
  const long first = (static_cast<long>(node) + 1) * width_;
  for (long c = first; c < first + width_ && c < static_cast<long>(nodes_.size()); ++c) out.push_back(static_cast<int>(c));
  return out;
}

std::vector<int> LaunchTree::Subtree(int node) const {
  std::vector<int> out = {node};
  for (size_t i = 0; i < out.size(); ++i)
    for (int c : Children(out[i])) out.push_back(c);
  return out;
}

int LaunchTree::Depth() const {
  int depth = 0;
  for (long last = static_cast<long>(nodes_.size()) - 1; last >= 0; last = last / width_ - 1) ++depth;
  return depth;
}

std::vector<int> LaunchTree::OnRegistered(int node, Clock::time_point now) {
  std::vector<int> handed;
  if (node < 0 || node >= static_cast<int>(nodes_.size()) || nodes_[node].state == State::kRegistered) return handed;
  nodes_[node].state = State::kRegistered;
  for (int c : Children(node)) {
    if (nodes_[c].state != State::kWaiting) continue;
    nodes_[c] = {State::kHanded, node, now + handoff_timeout_};
    handed.push_back(c);
  }
  return handed;
}

bool LaunchTree::OnStartEnded(int parent, int child) {
  if (child < 0 || child >= static_cast<int>(nodes_.size())) return false;
  Node& c = nodes_[child];
  if (c.state != State::kHanded || c.holder != parent) return false;
  c = {State::kDirect, -1, {}};
  return true;
}

std::vector<int> LaunchTree::Overdue(Clock::time_point now) {
  std::vector<int> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].state != State::kHanded || now < nodes_[i].deadline) continue;
    nodes_[i] = {State::kDirect, -1, {}};
    out.push_back(static_cast<int>(i));
  }
  return out;
}

std::optional<Clock::time_point> LaunchTree::NextDeadline() const {
  std::optional<Clock::time_point> next;
  for (const Node& n : nodes_)
    if (n.state == State::kHanded && (!next || n.deadline < *next)) next = n.deadline;
  return next;
}

}  // namespace ds
