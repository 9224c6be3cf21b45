#include "launcher/report/job_view_json.h"

#include <nlohmann/json.hpp>

namespace ds {

using nlohmann::json;

std::string JobViewJson(const JobView& v) {
  json nodes = json::array(), ranks = json::array();
  for (const NodeView& n : v.nodes)
    nodes.push_back({{"node", n.node}, {"host", n.host}, {"state", n.state}, {"heard_seconds_ago", n.heard_seconds_ago}});
  for (const RankView& r : v.ranks)
    ranks.push_back({{"rank", r.rank}, {"node", r.node}, {"host", r.host}, {"step", r.step},
                     {"step_seconds", r.step_seconds}, {"samples_per_second", r.samples_per_second}});
  json j = {{"job_id", v.job_id}, {"pid", v.pid}, {"state", v.state}, {"elapsed_seconds", v.elapsed_seconds},
            {"generation", v.generation}, {"restarts", v.restarts}, {"max_restarts", v.max_restarts},
            {"world_size", v.world_size}, {"ranks_running", v.ranks_running},
            {"agents_registered", v.agents_registered}, {"nodes_lost", v.nodes_lost}, {"exit_code", v.exit_code},
            {"nodes", nodes}, {"ranks", ranks}};
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
    for (const json& n : j.at("nodes"))
      v.nodes.push_back({n.at("node").get<uint32_t>(), n.at("host").get<std::string>(),
                         n.at("state").get<std::string>(), n.at("heard_seconds_ago").get<double>()});
    for (const json& r : j.at("ranks"))
      v.ranks.push_back({r.at("rank").get<int32_t>(), r.at("node").get<uint32_t>(), r.at("host").get<std::string>(),
                         r.at("step").get<int64_t>(), r.at("step_seconds").get<double>(),
                         r.at("samples_per_second").get<double>()});
    return v;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("status: not a job's view: ") + e.what());
  }
}

}  // namespace ds
