#include "sim/sim_workers.h"

#include "common/strings.h"
#include "wire/client_conn.h"

namespace ds::sim {
namespace {

std::string EnvValue(const KeyValues& env, const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  return "";
}

constexpr pid_t kPidBase = 100000;  // what the coordinator is told; nothing runs there

}  // namespace

std::vector<WorkerStart> SimWorkers::StartWorkers(const msg::Assign& m, const std::vector<std::string>& beat_tokens,
                                                  const std::string&) {
  const bool again = generation_ == static_cast<int>(m.generation);
  generation_ = static_cast<int>(m.generation);
  ranks_.clear();
  running_.clear();
  tokens_ = beat_tokens;
  steps_.assign(beat_tokens.size(), 0);
  std::vector<WorkerStart> out;
  for (const msg::WorkerSpec& w : m.workers) {
    ranks_.push_back(w.rank);
    running_.insert(w.rank);
    out.push_back({kPidBase + w.rank, ""});
  }
  world_ = -1;
  if (!m.workers.empty()) {
    const KeyValues& env = m.workers.front().env;
    world_ = ParseInt(EnvValue(env, "WORLD_SIZE")).value_or(-1);
    store_token_ = EnvValue(env, "DSLAUNCH_STORE_TOKEN");
    auto hp = SplitHostPort(EnvValue(env, "DSLAUNCH_STORE_ADDR"));
    boost::system::error_code ec;
    if (hp.ok())
      store_ = asio::ip::tcp::endpoint(asio::ip::make_address(hp->first, ec), static_cast<uint16_t>(hp->second));
  }
  on_started_(m, again);
  return out;
}

void SimWorkers::SignalGroup(int rank, int sig) {
  const int gen = generation_;
  asio::post(io_, [this, gen, rank, sig] { End(gen, rank, 0, sig); });
}

void SimWorkers::Finish(int gen) {
  const std::set<int> ranks = running_;
  for (int r : ranks) End(gen, r, 0, 0);
}

void SimWorkers::Beat(int rank, int64_t compute_micros, int64_t samples) {
  for (size_t i = 0; i < ranks_.size(); ++i)
    if (ranks_[i] == rank && running_.count(rank)) on_beat_(StepBeat{rank, ++steps_[i], tokens_[i], compute_micros, samples});
}

void SimWorkers::End(int gen, int rank, int code, int sig) {
  if (gen != generation_ || running_.erase(rank) == 0) return;  // an earlier generation's, or ended already
  on_exit_(WorkerExit{rank, kPidBase + rank, code, sig, std::nullopt});
}

}  // namespace ds::sim
