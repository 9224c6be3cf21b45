// The Prometheus exposition of a JobView: families with HELP and TYPE,
// dslaunch_ names with units, labels escaped.
#include "launcher/report/metrics_text.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("metrics text: job-level families and per-node, per-rank samples", "[metrics_text]") {
  JobView v;
  v.job_id = "ab12";
  v.generation = 2;
  v.restarts = 2;
  v.max_restarts = 3;
  v.world_size = 2;
  v.agents_registered = 2;
  v.nodes_lost = 1;
  v.nodes = {{0, "n0", "running", 0.25}, {1, "n\"1", "lost", -1}};
  v.ranks = {{0, 0, "n0", 40, 0.5, 64}, {1, 0, "n0", -1, 0, -1}};
  const std::string t = MetricsText(v);
  CHECK(t.find("# HELP dslaunch_generation ") != std::string::npos);
  CHECK(t.find("# TYPE dslaunch_generation gauge\ndslaunch_generation{job=\"ab12\"} 2\n") != std::string::npos);
  CHECK(t.find("# TYPE dslaunch_restarts_total counter\ndslaunch_restarts_total{job=\"ab12\"} 2\n") != std::string::npos);
  CHECK(t.find("dslaunch_nodes_lost_total{job=\"ab12\"} 1\n") != std::string::npos);
  CHECK(t.find("dslaunch_agents_registered{job=\"ab12\"} 2\n") != std::string::npos);
  CHECK(t.find("dslaunch_node_up{job=\"ab12\",node=\"1\",host=\"n\\\"1\"} 0\n") != std::string::npos);
  CHECK(t.find("dslaunch_node_heartbeat_age_seconds{job=\"ab12\",node=\"0\",host=\"n0\"} 0.25\n") != std::string::npos);
  CHECK(t.find("dslaunch_node_heartbeat_age_seconds{job=\"ab12\",node=\"1\"") == std::string::npos);  // never heard
  CHECK(t.find("dslaunch_rank_step{job=\"ab12\",rank=\"0\",node=\"0\",host=\"n0\"} 40\n") != std::string::npos);
  CHECK(t.find("dslaunch_rank_step{job=\"ab12\",rank=\"1\"") == std::string::npos);  // no step yet
  CHECK(t.find("dslaunch_rank_step_seconds{job=\"ab12\",rank=\"0\",node=\"0\",host=\"n0\"} 0.5\n") != std::string::npos);
  CHECK(t.find("dslaunch_rank_samples_per_second{job=\"ab12\",rank=\"0\",node=\"0\",host=\"n0\"} 64\n") !=
        std::string::npos);
  CHECK(t.back() == '\n');
}

TEST_CASE("metrics text: label values escape backslash, quote and newline", "[metrics_text]") {
  CHECK(EscapeLabel("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace ds
