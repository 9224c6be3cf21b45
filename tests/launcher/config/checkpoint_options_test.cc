// The job file's checkpoint: section (launcher/config/checkpoint_options.h):
// parsing and its errors, the defaults that depend on the directory and the
// node count, {host}/{node} per node (stable across restarts), the start
// warnings.
#include "launcher/config/checkpoint_options.h"

#include <catch2/catch.hpp>

#include "launcher/config/hostfile.h"
#include "launcher/config/job_spec.h"
#include "launcher/config/worker_env.h"
#include "launcher/config/selection.h"

namespace ds {
namespace {

JobSpec Parse(const std::string& text) {
  auto r = ParseJobFile("command: [/bin/true]\n" + text, "train.yaml");
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}
std::string ErrorOf(const std::string& text) {
  auto r = ParseJobFile("command: [/bin/true]\n" + text, "train.yaml");
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.status().message();
  return m.substr(0, m.find('\n'));  // the echoed line and caret: "job file: errors echo ..." below
}
std::string Env(const KeyValues& env, const std::string& key) {
  for (const auto& [k, v] : env)
    if (k == key) return v;
  return "<unset>";
}

TEST_CASE("checkpoint section: every key, and the shorthand", "[config][snapshots]") {
  JobSpec j = Parse("checkpoint: {dir: \"/local/{host}/ckpt\", shared: false, replicas: 2, keep: 5}\n");
  CHECK(j.checkpoint.dir == "/local/{host}/ckpt");
  CHECK(j.checkpoint.shared == false);
  CHECK(j.checkpoint.replicas == 2);
  CHECK(j.checkpoint.keep == 5);
  JobSpec s = Parse("checkpoint_dir: /ckpt\n");
  CHECK(s.checkpoint.dir == "/ckpt");
  CHECK_FALSE(s.checkpoint.shared.has_value());
  CHECK_FALSE(s.checkpoint.replicas.has_value());
  CHECK(s.checkpoint.keep == 2);
  JobSpec both = Parse("checkpoint_dir: /ckpt\ncheckpoint: {replicas: 1}\n");
  CHECK(both.checkpoint.dir == "/ckpt");
  CHECK(both.checkpoint.replicas == 1);
}

TEST_CASE("checkpoint section: bad input names the line and the key", "[config][snapshots]") {
  CHECK(ErrorOf("checkpoint: {dir: /a, replica: 1}\n") ==
        "train.yaml:2:23: unknown key 'replica' in checkpoint (did you mean 'replicas'?)");
  CHECK(ErrorOf("checkpoint:\n  replicas: 17\n") ==
        "train.yaml:3:13: 'replicas': expected an integer between 0 and 16, got '17'");
  CHECK(ErrorOf("checkpoint:\n  keep: 0\n") == "train.yaml:3:9: 'keep': expected an integer between 1 and 1000, got '0'");
  CHECK(ErrorOf("checkpoint:\n  shared: maybe\n") == "train.yaml:3:11: 'shared': expected true or false");
  CHECK(ErrorOf("checkpoint: /ckpt\n") == "train.yaml:2:13: expected a mapping for 'checkpoint'");
  CHECK(ErrorOf("checkpoint_dir: /a\ncheckpoint:\n  dir: /b\n") ==
        "train.yaml:4:3: 'checkpoint': dir and checkpoint_dir: are both set; use one of them");
  CHECK(ErrorOf("checkpoint:\n  dir: /b\ncheckpoint_dir: /a\n") ==
        "train.yaml:4:1: 'checkpoint_dir' and checkpoint: dir are both set; use one of them");
  CHECK(ErrorOf("checkpoint:\n  dir: /l/{host}\n  shared: true\n") ==
        "train.yaml:4:3: 'checkpoint': dir /l/{host} holds {host} or {node}, so the nodes do not share it; "
        "remove shared: true");
}

TEST_CASE("checkpoint section: shared, replicas and snapshots by default", "[config][snapshots]") {
  CheckpointOptions shared{"/ckpt"};
  CHECK(shared.SharedDir());
  CHECK(shared.Replicas(4) == 0);
  CHECK_FALSE(shared.Snapshots(4));
  CheckpointOptions local{"/l/{host}"};
  CHECK_FALSE(local.SharedDir());
  CHECK(local.Replicas(4) == 1);
  CHECK(local.Replicas(1) == 0);
  CHECK(local.Snapshots(4));
  CHECK(local.Snapshots(1));  // one node: its agent still keeps the snapshots
  CheckpointOptions explicit_local{"/local", false};
  CHECK(explicit_local.Replicas(2) == 1);
  CheckpointOptions shared_replicated{"/ckpt", std::nullopt, 1};
  CHECK(shared_replicated.Snapshots(2));
  CHECK_FALSE(CheckpointOptions{}.Snapshots(2));
  CHECK(ExpandCheckpointDir("/l/{host}/n{node}/{host}", "w1", 3) == "/l/w1/n3/w1");
  CHECK(ExpandCheckpointDir("/plain", "w1", 3) == "/plain");
}

TEST_CASE("checkpoint section: warnings for a per-node dir without replicas and for too many replicas",
          "[config][snapshots]") {
  CHECK(CheckpointWarnings(CheckpointOptions{"/l/{host}"}, 3).empty());
  CHECK(CheckpointWarnings(CheckpointOptions{"/l/{host}", std::nullopt, 0}, 1).empty());
  auto w = CheckpointWarnings(CheckpointOptions{"/l/{host}", std::nullopt, 0}, 3);
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "checkpoint.dir /l/{host} is per node (not shared) and checkpoint.replicas is 0: a lost node's "
                "shards are lost with it, and the job resumes from the newest step the survivors still hold (or "
                "from scratch)");
  auto many = CheckpointWarnings(CheckpointOptions{"/l/{host}", std::nullopt, 3}, 2);
  REQUIRE(many.size() == 1);
  CHECK(many[0] == "checkpoint.replicas 3: only 1 other node; each shard gets 1 copy");
}

TEST_CASE("checkpoint section: each node's DSLAUNCH_CHECKPOINT_DIR, {node} stable when a standby steps in",
          "[config][snapshots]") {
  JobSpec job = Parse("checkpoint:\n  dir: /l/{host}-{node}\nelastic: {max_nodes: 2, min_nodes: 1}\n");
  Hostfile hf = ParseHostfile("a slots=1\nb slots=1\nc slots=1\n", "hostfile").value();
  LaunchPlan plan = MakePlan(SelectHosts(hf, SelectionOptions{}).value(), job, false).value();
  REQUIRE(plan.standbys.size() == 1);
  CHECK(plan.standbys[0].index == 2);
  CHECK(Env(WorkerEnv(plan, 1, 0, GenerationInfo{}, {}), "DSLAUNCH_CHECKPOINT_DIR") == "/l/b-1");
  // b is lost: c steps in as node rank 1 and keeps its own directory.
  LaunchPlan next = PlanOnNodes(plan, {true, false, true}).value();
  REQUIRE(next.nodes.size() == 2);
  CHECK(next.nodes[1].host.name == "c");
  CHECK(next.nodes[1].node_rank == 1);
  CHECK(next.nodes[1].index == 2);
  CHECK(Env(WorkerEnv(next, 1, 0, GenerationInfo{}, {}), "DSLAUNCH_CHECKPOINT_DIR") == "/l/c-2");
  // Twice over: the indices stay those of the first plan.
  LaunchPlan again = PlanOnNodes(next, {false, true}).value();
  CHECK(again.nodes[0].index == 2);
}

}  // namespace
}  // namespace ds
