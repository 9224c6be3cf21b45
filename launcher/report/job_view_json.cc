#include "launcher/report/job_view_json.h"

#include <nlohmann/json.hpp>

namespace ds {

using nlohmann::json;

namespace {

NodeSnapshotView ParseNodeSnapshot(const json& s) {
  NodeSnapshotView v;
  v.step = s.at("step").get<int64_t>();
  v.in_memory = s.at("in_memory").get<bool>();
  v.bytes_held = s.at("bytes_held").get<uint64_t>();
  v.handed_bytes = s.at("handed_bytes").get<uint64_t>();
  v.replica_bytes = s.at("replica_bytes").get<uint64_t>();
  v.replica_seconds = s.at("replica_seconds").get<double>();
  v.disk_bytes = s.at("disk_bytes").get<uint64_t>();
  v.disk_seconds = s.at("disk_seconds").get<double>();
  return v;
}

}  // namespace

std::string JobViewJson(const JobView& v) {
  json nodes = json::array(), ranks = json::array();
  for (const NodeView& n : v.nodes) {
    const NodeSnapshotView& s = n.snapshot;
    nodes.push_back({{"node", n.node}, {"host", n.host}, {"state", n.state}, {"heard_seconds_ago", n.heard_seconds_ago},
                     {"rtt_seconds", n.rtt_seconds}, {"slow", n.slow}, {"slow_link", n.slow_link},
                     {"snapshot", {{"step", s.step}, {"in_memory", s.in_memory}, {"bytes_held", s.bytes_held},
                                   {"handed_bytes", s.handed_bytes}, {"replica_bytes", s.replica_bytes},
                                   {"replica_seconds", s.replica_seconds}, {"disk_bytes", s.disk_bytes},
                                   {"disk_seconds", s.disk_seconds}}}});
  }
  for (const RankView& r : v.ranks) {
    json rank = {{"rank", r.rank}, {"node", r.node}, {"host", r.host}, {"step", r.step},
                 {"step_seconds", r.step_seconds}, {"samples_per_second", r.samples_per_second},
                 {"save_stall_seconds", r.save_stall_seconds}};
    if (r.loss_step >= 0) rank["loss"] = {{"step", r.loss_step}, {"value", r.loss}};  // only once said
    if (r.accuracy_step >= 0) rank["accuracy"] = {{"step", r.accuracy_step}, {"value", r.accuracy}};
    ranks.push_back(std::move(rank));
  }
  json j = {{"job_id", v.job_id}, {"pid", v.pid}, {"state", v.state}, {"elapsed_seconds", v.elapsed_seconds},
            {"generation", v.generation}, {"restarts", v.restarts}, {"max_restarts", v.max_restarts},
            {"world_size", v.world_size}, {"ranks_running", v.ranks_running},
            {"agents_registered", v.agents_registered}, {"nodes_lost", v.nodes_lost}, {"exit_code", v.exit_code},
            {"snapshots", v.snapshots}, {"snapshots_taken", v.snapshots_taken}, {"snapshot_step", v.snapshot_step},
            {"recovery_point_step", v.recovery_point_step}, {"steps_at_risk", v.steps_at_risk},
            {"worst_steps_at_risk", v.worst_steps_at_risk}, {"nodes", nodes}, {"ranks", ranks}};
  // Host names are the user's; replace anything not UTF-8 rather than throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<JobView> ParseJobViewJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("status: not a JSON object");
  try {
    JobView v;
    v.job_id = j.at("job_id").get<std::string>();
    v.pid = j.at("pid").get<int64_t>();
    v.state = j.at("state").get<std::string>();
    v.elapsed_seconds = j.at("elapsed_seconds").get<double>();
    v.generation = j.at("generation").get<int>();
    v.restarts = j.at("restarts").get<int>();
    v.max_restarts = j.at("max_restarts").get<int>();
    v.world_size = j.at("world_size").get<int>();
    v.ranks_running = j.at("ranks_running").get<int>();
    v.agents_registered = j.at("agents_registered").get<int>();
    v.nodes_lost = j.at("nodes_lost").get<int>();
    v.exit_code = j.at("exit_code").get<int>();
    // Records of an older dslaunch lack the RTT and snapshot figures: their defaults.
    v.snapshots = j.value("snapshots", false);
    v.snapshots_taken = j.value("snapshots_taken", uint64_t{0});
    v.snapshot_step = j.value("snapshot_step", int64_t{-1});
    v.recovery_point_step = j.value("recovery_point_step", int64_t{-1});
    v.steps_at_risk = j.value("steps_at_risk", int64_t{-1});
    v.worst_steps_at_risk = j.value("worst_steps_at_risk", int64_t{-1});
    for (const json& n : j.at("nodes")) {
      NodeView nv{n.at("node").get<uint32_t>(), n.at("host").get<std::string>(), n.at("state").get<std::string>(),
                  n.at("heard_seconds_ago").get<double>(), n.value("rtt_seconds", -1.0), {}};
      if (n.contains("snapshot")) nv.snapshot = ParseNodeSnapshot(n.at("snapshot"));
      nv.slow = n.value("slow", false);  // records of an older dslaunch: not slow
      nv.slow_link = n.value("slow_link", false);
      v.nodes.push_back(std::move(nv));
    }
    for (const json& r : j.at("ranks")) {
      RankView rv{r.at("rank").get<int32_t>(), r.at("node").get<uint32_t>(), r.at("host").get<std::string>(),
                  r.at("step").get<int64_t>(), r.at("step_seconds").get<double>(),
                  r.at("samples_per_second").get<double>(), r.value("save_stall_seconds", -1.0)};
      if (r.contains("loss")) {  // older records, and ranks that said none, have no loss
        rv.loss_step = r.at("loss").at("step").get<int64_t>();
        rv.loss = r.at("loss").at("value").get<double>();
      }
      if (r.contains("accuracy")) {
        rv.accuracy_step = r.at("accuracy").at("step").get<int64_t>();
        rv.accuracy = r.at("accuracy").at("value").get<double>();
      }
      v.ranks.push_back(std::move(rv));
    }
    return v;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("status: not a job's view: ") + e.what());
  }
}

}  // namespace ds
