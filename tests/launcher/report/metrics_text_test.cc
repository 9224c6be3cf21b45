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
  v.ranks = {{0, 0, "n0", 40, 0.5, 64, 0.00025}, {1, 0, "n0", -1, 0, -1}};
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
  CHECK(t.find("dslaunch_rank_save_stall_seconds{job=\"ab12\",rank=\"0\",node=\"0\",host=\"n0\"} 0.00025\n") !=
        std::string::npos);
  CHECK(t.find("dslaunch_rank_save_stall_seconds{job=\"ab12\",rank=\"1\"") == std::string::npos);  // never saved
  CHECK(t.back() == '\n');
}

TEST_CASE("metrics text: each registered node's slow gauge, by cause", "[metrics_text]") {
  JobView v;
  v.job_id = "ab12";
  v.nodes = {{0, "n0", "running", 0.25}, {1, "n1", "running", 0.25}, {2, "n2", "waiting", -1}};
  v.nodes[0].slow_link = true;
  v.nodes[1].slow = true;
  const std::string t = MetricsText(v);
  CHECK(t.find("# TYPE dslaunch_node_slow gauge\n"
               "dslaunch_node_slow{job=\"ab12\",node=\"0\",host=\"n0\",cause=\"compute\"} 0\n"
               "dslaunch_node_slow{job=\"ab12\",node=\"0\",host=\"n0\",cause=\"link\"} 1\n"
               "dslaunch_node_slow{job=\"ab12\",node=\"1\",host=\"n1\",cause=\"compute\"} 1\n"
               "dslaunch_node_slow{job=\"ab12\",node=\"1\",host=\"n1\",cause=\"link\"} 0\n") != std::string::npos);
  CHECK(t.find("dslaunch_node_slow{job=\"ab12\",node=\"2\"") == std::string::npos);  // never registered
}

TEST_CASE("metrics text: heartbeat round trips per node, snapshot families only with snapshots on", "[metrics_text]") {
  JobView v;
  v.job_id = "ab12";
  v.nodes = {{0, "n0", "running", 0.25, 0.0015, {60, true, 4096, 8192, 2048, 0.5, 1024, 0.25}},
             {1, "n1", "running", 0.25, -1, {}}};
  std::string t = MetricsText(v);
  CHECK(t.find("# TYPE dslaunch_heartbeat_rtt_seconds gauge\n"
               "dslaunch_heartbeat_rtt_seconds{job=\"ab12\",node=\"0\",host=\"n0\"} 0.0015\n") != std::string::npos);
  CHECK(t.find("dslaunch_heartbeat_rtt_seconds{job=\"ab12\",node=\"1\"") == std::string::npos);  // none measured
  CHECK(t.find("dslaunch_snapshot") == std::string::npos);  // snapshots off
  v.snapshots = true;
  v.snapshots_taken = 7;
  v.snapshot_step = 60;
  t = MetricsText(v);
  CHECK(t.find("# TYPE dslaunch_snapshot_saves_total counter\ndslaunch_snapshot_saves_total{job=\"ab12\"} 7\n") !=
        std::string::npos);
  CHECK(t.find("dslaunch_snapshot_newest_step{job=\"ab12\"} 60\n") != std::string::npos);
  CHECK(t.find("# TYPE dslaunch_recovery_point_step gauge\n#") != std::string::npos);  // none yet: no sample
  v.recovery_point_step = 50;
  v.steps_at_risk = 12;
  t = MetricsText(v);
  CHECK(t.find("# TYPE dslaunch_recovery_point_step gauge\ndslaunch_recovery_point_step{job=\"ab12\"} 50\n") !=
        std::string::npos);
  CHECK(t.find("# TYPE dslaunch_steps_at_risk gauge\ndslaunch_steps_at_risk{job=\"ab12\"} 12\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_held_step{job=\"ab12\",node=\"0\",host=\"n0\"} 60\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_held_step{job=\"ab12\",node=\"1\"") == std::string::npos);  // holds nothing
  CHECK(t.find("dslaunch_snapshot_held_bytes{job=\"ab12\",node=\"0\",host=\"n0\"} 4096\n") != std::string::npos);
  CHECK(t.find("# TYPE dslaunch_snapshot_bytes_total counter\n"
               "dslaunch_snapshot_bytes_total{job=\"ab12\",node=\"0\",host=\"n0\"} 8192\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_bytes_total{job=\"ab12\",node=\"1\",host=\"n1\"} 0\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_replica_bytes_total{job=\"ab12\",node=\"0\",host=\"n0\"} 2048\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_replica_seconds_total{job=\"ab12\",node=\"0\",host=\"n0\"} 0.5\n") !=
        std::string::npos);
  CHECK(t.find("dslaunch_snapshot_disk_bytes_total{job=\"ab12\",node=\"0\",host=\"n0\"} 1024\n") != std::string::npos);
  CHECK(t.find("dslaunch_snapshot_disk_seconds_total{job=\"ab12\",node=\"0\",host=\"n0\"} 0.25\n") != std::string::npos);
}

TEST_CASE("metrics text: label values escape backslash, quote and newline", "[metrics_text]") {
  CHECK(EscapeLabel("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace ds
