#include "launcher/join/per_node_spawner.h"

#include "launcher/spawn/exit_signal.h"

namespace ds {
namespace {

class PeerAgent final : public AgentHandle {
 public:
  explicit PeerAgent(UniqueFd never) : never_(std::move(never)) {}
  bool Running() override { return false; }
  void Terminate() override {}
  int ExitStatus() override { return -1; }
  int exit_fd() const override { return never_.get(); }

 private:
  UniqueFd never_;  // an eventfd nobody raises
};

}  // namespace

std::vector<Result<std::unique_ptr<AgentHandle>>> PerNodeSpawner::Start(const std::vector<AgentSpec>& specs) {
  std::vector<Result<std::unique_ptr<AgentHandle>>> out;
  for (const AgentSpec& s : specs) {
    if (s.node_index == self_) {
      auto started = local_.Start({s});
      out.push_back(std::move(started[0]));
      continue;
    }
    auto fd = MakeExitEvent();
    if (!fd.ok()) out.emplace_back(fd.status().Prefixed(s.host));
    else out.emplace_back(std::unique_ptr<AgentHandle>(std::make_unique<PeerAgent>(std::move(fd).value())));
  }
  return out;
}

}  // namespace ds
