#include "launcher/report/run_report_json.h"

#include <nlohmann/json.hpp>

namespace ds {

using nlohmann::json;

Result<std::string> WithTimeline(const std::string& record, const RunTimeline& t) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("job record: not a JSON object");
  json gens = json::array(), events = json::array(), samples = json::array();
  for (const TimelineGeneration& g : t.generations)
    gens.push_back({{"generation", g.generation}, {"start", g.start}, {"world_size", g.world_size}, {"nodes", g.nodes}});
  for (const TimelineEvent& e : t.events)
    events.push_back({{"t", e.t}, {"kind", e.kind}, {"node", e.node}, {"host", e.host}, {"text", e.text}});
  json snapshots = json::array();
  for (const TimelineSample& s : t.samples) samples.push_back({s.t, s.samples_per_second});
  for (const TimelineSnapshot& s : t.snapshots) snapshots.push_back({s.t, s.step});
  json losses = json::array(), accuracies = json::array(), columns = json::array();
  for (const MetricPoint& p : t.losses) losses.push_back({p.step, p.value});
  for (const MetricPoint& p : t.accuracies) accuracies.push_back({p.step, p.value});
  for (const StripColumn& c : t.strip) columns.push_back({c.t, c.step_seconds});
  j["timeline"] = {{"end", t.end},
                   {"dropped", t.dropped},
                   {"generations", gens},
                   {"events", events},
                   {"samples", samples},
                   {"snapshots", snapshots},
                   {"metric_rank", t.metric_rank},
                   {"losses", losses},
                   {"accuracies", accuracies},
                   {"strip", {{"ranks", t.strip_ranks}, {"left_out", t.strip_ranks_left_out}, {"columns", columns}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// The loss and accuracy points and the step-time strip; records of an older
// dslaunch have none. Throws json::exception on a wrong shape.
void ParseCurves(const json& tj, RunTimeline& t) {
  t.metric_rank = tj.value("metric_rank", -1);
  if (tj.contains("losses"))
    for (const json& p : tj.at("losses")) t.losses.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>()});
  if (tj.contains("accuracies"))
    for (const json& p : tj.at("accuracies")) t.accuracies.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>()});
  if (!tj.contains("strip")) return;
  const json& s = tj.at("strip");
  t.strip_ranks = s.at("ranks").get<std::vector<int32_t>>();
  t.strip_ranks_left_out = s.at("left_out").get<size_t>();
  for (const json& c : s.at("columns")) {
    StripColumn col{c.at(0).get<double>(), c.at(1).get<std::vector<double>>()};
    if (col.step_seconds.size() > t.strip_ranks.size()) col.step_seconds.resize(t.strip_ranks.size());  // never past its ranks
    t.strip.push_back(std::move(col));
  }
}

}  // namespace

Result<RunTimeline> ParseTimeline(const std::string& record, const std::string& what) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(what + ": not a JSON object");
  RunTimeline t;
  if (!j.contains("timeline")) return t;
  try {
    const json& tj = j.at("timeline");
    t.end = tj.at("end").get<double>();
    t.dropped = tj.at("dropped").get<size_t>();
    for (const json& g : tj.at("generations"))
      t.generations.push_back({g.at("generation").get<int>(), g.at("start").get<double>(),
                               g.at("world_size").get<int>(), g.at("nodes").get<std::vector<uint32_t>>()});
    for (const json& e : tj.at("events"))
      t.events.push_back({e.at("t").get<double>(), e.at("kind").get<std::string>(), e.at("node").get<int>(),
                          e.at("host").get<std::string>(), e.at("text").get<std::string>()});
    for (const json& s : tj.at("samples")) t.samples.push_back({s.at(0).get<double>(), s.at(1).get<double>()});
    if (tj.contains("snapshots"))  // records of an older dslaunch have no snapshot points
      for (const json& s : tj.at("snapshots")) t.snapshots.push_back({s.at(0).get<double>(), s.at(1).get<int64_t>()});
    ParseCurves(tj, t);
    return t;
  } catch (const json::exception& e) {
    return Status::InvalidArgument(what + ": not a timeline (\"timeline\" with end, dropped, generations, events, "
                                          "samples): " + e.what());
  }
}

Result<std::string> WithEnding(const std::string& record, const RecordEnding& e) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument("job record: not a JSON object");
  std::string stacks = e.hang_stacks.substr(0, RecordEnding::kMaxStacksText);
  if (stacks.size() < e.hang_stacks.size()) stacks += "\n[cut at 64 KiB]\n";
  j["ending"] = {{"summary", e.summary},         {"argv", e.argv},         {"started", e.started},
                 {"command_line", e.command_line}, {"job_file", e.job_file}, {"hostfile", e.hostfile},
                 {"version", e.version},         {"log_dir", e.log_dir},   {"checkpoint_dir", e.checkpoint_dir},
                 {"stacks_path", e.stacks_path}, {"hang_stacks", stacks}, {"hang_report", e.hang_report}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<RecordEnding> ParseEnding(const std::string& record, const std::string& what) {
  json j = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(what + ": not a JSON object");
  RecordEnding e;
  if (!j.contains("ending")) return e;
  try {
    const json& ej = j.at("ending");
    e.summary = ej.at("summary").get<std::string>();
    e.argv = ej.at("argv").get<std::vector<std::string>>();
    e.started = ej.at("started").get<int64_t>();
    // Records of an older dslaunch lack these: empty.
    e.command_line = ej.value("command_line", std::vector<std::string>{});
    e.job_file = ej.value("job_file", "");
    e.hostfile = ej.value("hostfile", "");
    e.version = ej.value("version", "");
    e.log_dir = ej.value("log_dir", "");
    e.checkpoint_dir = ej.value("checkpoint_dir", "");
    e.stacks_path = ej.value("stacks_path", "");
    e.hang_stacks = ej.value("hang_stacks", "");
    e.hang_report = ej.value("hang_report", std::vector<std::string>{});
    return e;
  } catch (const json::exception& ex) {
    return Status::InvalidArgument(what + ": not an ending (\"ending\" with summary, argv, started): " + ex.what());
  }
}

}  // namespace ds
