#include "tests/launcher/spawn/fake_spawner.h"

#include <signal.h>

#include "common/check.h"
#include "launcher/spawn/exit_signal.h"

namespace ds {

struct FakeAgentState {
  UniqueFd exit_event;
  bool running = true;
  bool terminated = false;
  int status = -1;

  void End(int s) {
    if (!running) return;
    running = false;
    status = s;
    RaiseExitEvent(exit_event.get());
  }
};

namespace {

class FakeAgent final : public AgentHandle {
 public:
  explicit FakeAgent(std::shared_ptr<FakeAgentState> st) : st_(std::move(st)) {}
  ~FakeAgent() override { Terminate(); }
  bool Running() override { return st_->running; }
  void Terminate() override {
    if (!st_->running) return;
    st_->terminated = true;
    st_->End(128 + SIGTERM);
  }
  int ExitStatus() override { return st_->status; }
  int exit_fd() const override { return st_->exit_event.get(); }

 private:
  std::shared_ptr<FakeAgentState> st_;
};

}  // namespace

FakeSpawner::FakeSpawner() = default;
FakeSpawner::~FakeSpawner() = default;

void FakeSpawner::FailHost(const std::string& host, Status status) { failures_[host].push_back(std::move(status)); }

std::vector<Result<std::unique_ptr<AgentHandle>>> FakeSpawner::Start(const std::vector<AgentSpec>& specs) {
  if (before_start_) before_start_();
  std::vector<Result<std::unique_ptr<AgentHandle>>> out;
  for (const auto& spec : specs) {
    auto f = failures_.find(spec.host);
    if (f != failures_.end() && !f->second.empty()) {
      out.emplace_back(f->second.front());
      f->second.erase(f->second.begin());
      continue;
    }
    auto event = MakeExitEvent();
    if (!event.ok()) {
      out.emplace_back(event.status().Prefixed(spec.host));
      continue;
    }
    auto st = std::make_shared<FakeAgentState>();
    st->exit_event = std::move(event).value();
    out.emplace_back(std::unique_ptr<AgentHandle>(std::make_unique<FakeAgent>(st)));
    started_.push_back(spec);
    agents_.push_back(std::move(st));
  }
  return out;
}

void FakeSpawner::End(size_t i, int status) {
  DS_CHECK(i < agents_.size());
  agents_[i]->End(status);
}

bool FakeSpawner::Terminated(size_t i) const {
  DS_CHECK(i < agents_.size());
  return agents_[i]->terminated;
}

}  // namespace ds
