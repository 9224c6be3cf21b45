#include "launcher/coordinator/job_state.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ds {
namespace {

using nlohmann::json;

constexpr CoordState kStates[] = {CoordState::kWaitingForAgents, CoordState::kGathering, CoordState::kReserving,
                                  CoordState::kRunning,          CoordState::kStopping,  CoordState::kDone};

int64_t LeftMs(Clock::time_point until, Clock::time_point now) {
  return until <= now ? 0 : std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
}

Clock::time_point Until(int64_t left_ms, Clock::time_point now) { return now + std::chrono::milliseconds(left_ms); }

// Reads j[key] as T; false (and *err naming the key) when missing or of another type.
template <typename T>
bool Get(const json& j, const char* key, T* out, std::string* err) {
  auto it = j.find(key);
  if (it == j.end()) {
    *err = fmt::format("missing key '{}'", key);
    return false;
  }
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    *err = fmt::format("key '{}': unexpected {}", key, it->type_name());
    return false;
  }
  return true;
}

bool DecodeBody(const json& j, Clock::time_point now, JobState* s, std::string* err) {
  std::string phase;
  std::map<std::string, int64_t> cooldown_left, evicted_left;
  json candidates, recovery;
  if (!Get(j, "job_id", &s->job_id, err) || !Get(j, "run_id", &s->run_id, err) || !Get(j, "phase", &phase, err) ||
      !Get(j, "generation", &s->generation, err) || !Get(j, "generation_nodes", &s->generation_nodes, err) ||
      !Get(j, "world_size", &s->world_size, err) || !Get(j, "master_port", &s->master_port, err) ||
      !Get(j, "candidates", &candidates, err) || !Get(j, "restarts", &s->budget.restarts, err) ||
      !Get(j, "host_failures", &s->budget.host_failures, err) ||
      !Get(j, "host_cooldown_left_ms", &cooldown_left, err) || !Get(j, "gpu_out", &s->budget.gpu_out, err) ||
      !Get(j, "evicted_left_ms", &evicted_left, err) || !Get(j, "recovery_point", &recovery, err) ||
      !Get(j, "worst_at_risk", &s->worst_at_risk, err))
    return false;
  auto fail = [&](std::string why) {
    *err = std::move(why);
    return false;
  };
  const auto* known = std::find_if(std::begin(kStates), std::end(kStates),
                                   [&](CoordState c) { return phase == CoordStateName(c); });
  if (known == std::end(kStates)) return fail(fmt::format("key 'phase': unknown phase '{}'", phase));
  s->phase = *known;
  if (!candidates.is_array()) return fail("key 'candidates': expected an array");
  for (const json& c : candidates) {
    CandidateState cs;
    if (!Get(c, "name", &cs.name, err) || !Get(c, "registered", &cs.registered, err) || !Get(c, "lost", &cs.lost, err))
      return fail("candidates: " + *err);
    s->candidates.push_back(std::move(cs));
  }
  for (int n : s->generation_nodes)
    if (n < 0 || static_cast<size_t>(n) >= s->candidates.size())
      return fail(fmt::format("key 'generation_nodes': candidate {} out of range", n));
  for (const auto& [host, left] : cooldown_left) s->budget.cooldown_until[host] = Until(left, now);
  for (const auto& [node, left] : evicted_left) {
    const unsigned long n = std::strtoul(node.c_str(), nullptr, 10);
    if (node.empty() || node.find_first_not_of("0123456789") != std::string::npos || n >= s->candidates.size())
      return fail(fmt::format("key 'evicted_left_ms': '{}' is not a candidate", node));
    s->evicted_until[static_cast<uint32_t>(n)] = Until(left, now);
  }
  return Get(recovery, "step", &s->recovery_point.step, err) && Get(recovery, "set", &s->recovery_point.set, err);
}

}  // namespace

const char* CoordStateName(CoordState s) {
  switch (s) {
    case CoordState::kWaitingForAgents: return "waiting_for_agents";
    case CoordState::kGathering: return "gathering";
    case CoordState::kReserving: return "reserving";
    case CoordState::kRunning: return "running";
    case CoordState::kStopping: return "stopping";
    case CoordState::kDone: return "done";
  }
  return "?";
}

std::string EncodeJobState(const JobState& s, Clock::time_point now) {
  json candidates = json::array();
  for (const CandidateState& c : s.candidates)
    candidates.push_back({{"name", c.name}, {"registered", c.registered}, {"lost", c.lost}});
  std::map<std::string, int64_t> cooldown_left, evicted_left;
  for (const auto& [host, until] : s.budget.cooldown_until) cooldown_left[host] = LeftMs(until, now);
  for (const auto& [node, until] : s.evicted_until) evicted_left[std::to_string(node)] = LeftMs(until, now);
  json j = {{"version", JobState::kVersion},
            {"job_id", s.job_id},
            {"run_id", s.run_id},
            {"phase", CoordStateName(s.phase)},
            {"generation", s.generation},
            {"generation_nodes", s.generation_nodes},
            {"world_size", s.world_size},
            {"master_port", s.master_port},
            {"candidates", candidates},
            {"restarts", s.budget.restarts},
            {"host_failures", s.budget.host_failures},
            {"host_cooldown_left_ms", cooldown_left},
            {"gpu_out", s.budget.gpu_out},
            {"evicted_left_ms", evicted_left},
            {"recovery_point", {{"step", s.recovery_point.step}, {"set", s.recovery_point.set}}},
            {"worst_at_risk", s.worst_at_risk}};
  return j.dump();
}

Result<JobState> DecodeJobState(const std::string& text, Clock::time_point now, const std::string& where) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(where + ": not a JSON object");
  JobState s;
  std::string err;
  int version = 0;
  if (!Get(j, "version", &version, &err)) return Status::InvalidArgument(fmt::format("{}: {}", where, err));
  if (version != JobState::kVersion)
    return Status::InvalidArgument(
        fmt::format("{}: job state version {}, expected {} (written by another dslaunch version)", where, version,
                    JobState::kVersion));
  if (!DecodeBody(j, now, &s, &err)) return Status::InvalidArgument(fmt::format("{}: {}", where, err));
  return s;
}

}  // namespace ds
