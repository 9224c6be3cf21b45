#include "launcher/coordinator/stack_collection.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {

void StackCollection::Begin(std::string why, int culprit, int generation, Clock::time_point now,
                            const std::vector<int>& asked) {
  Clear();
  why_ = std::move(why);
  culprit_ = culprit;
  generation_ = generation;
  deadline_ = now + Seconds(kSeconds);
  owed_ = asked;
}

bool StackCollection::OnStacks(int node, const msg::Stacks& m) {
  auto it = std::find(owed_.begin(), owed_.end(), node);
  if (!active() || static_cast<int>(m.generation) != generation_ || it == owed_.end()) return complete();
  owed_.erase(it);
  for (const msg::RankStack& s : m.ranks) got_[s.rank] = s;
  return complete();
}

std::vector<HangStack> StackCollection::Finish(const JobRecord& record, const RankProgressView& progress) {
  std::vector<HangStack> stacks;
  for (const auto& [rank, w] : record.workers()) {
    HangStack h{rank, w.host, -1, "", fmt::format("no answer from {} within {:g} s", w.host, kSeconds)};
    for (const RankProgress& p : progress.Ranks())
      if (p.rank == rank) h.step = p.step;
    if (auto it = got_.find(rank); it != got_.end()) {
      h.tool = it->second.tool;
      h.text = it->second.text;
    }
    stacks.push_back(std::move(h));
  }
  deadline_ = Clock::time_point::max();
  return stacks;
}

}  // namespace ds
