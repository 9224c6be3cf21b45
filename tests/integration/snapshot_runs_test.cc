// Snapshots across runs of one job file (issue 26), with real dslaunch,
// dsagent and dstrain processes on 127.0.0.1..2 and a checkpoint directory
// per node: a 2-node run, a 1-node run, a 2-node run again. The 1-node run
// keeps the first run's shard on node 1's disk beside its own and says so;
// the last run resumes one whole save, never shards of both. Checked from
// the outside: the files on the nodes' disks and what dslaunch and rank 0
// print.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "proc_harness.h"

namespace ds::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

const char* kJob =
    "checkpoint: {dir: \"ckpt-{host}\", replicas: 0}\n"
    "env: {OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1'}\n"
    "trainer:\n"
    "  model: {layers: [16, 32, 4], activation: relu}\n"
    "  data: {dataset: synthetic, samples: 1024, features: 16, classes: 4}\n"
    "  max_steps: 10\n"
    "  seed: 3\n"
    "  eval: {every_epoch: false}\n"
    "  checkpoint: {every_steps: 10, keep: 2}\n"
    "  config:\n"
    "    train_micro_batch_size_per_gpu: 8\n"
    "    optimizer: {type: Adam, params: {lr: 0.001}}\n"
    "    zero_optimization: {stage: 1}\n"
    "    steps_per_print: 100000\n";

struct Outcome {
  int code;
  std::string out, err;
};

Outcome RunOn(const TempDir& dir, int nodes) {
  Child c;
  int code = Run({DslaunchPath(), "--hostfile", HostfileFor(dir, nodes, 1), "job.yaml"}, dir.path(), &c,
                 seconds(120), JobEnv(dir));
  return {code, ReadFile(c.out_path), ReadFile(c.err_path)};
}

// Node `host`'s saves of step 10: "<directory>/<shard file>" -> its bytes.
std::map<std::string, std::string> Step10(const TempDir& dir, const std::string& host) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(dir / ("ckpt-" + host), ec)) {
    const std::string name = d.path().filename().string();
    if (name.rfind("step_00000010", 0) != 0) continue;
    for (const auto& f : fs::directory_iterator(d.path(), ec))
      if (f.path().extension() == ".bin") out[name + "/" + f.path().filename().string()] = ReadFile(f.path().string());
  }
  return out;
}
// Every file of `before` is in `after` with the same bytes.
bool Unchanged(const std::map<std::string, std::string>& before, const std::map<std::string, std::string>& after) {
  for (const auto& [path, bytes] : before) {
    auto it = after.find(path);
    if (it == after.end() || it->second != bytes) return false;
  }
  return true;
}
size_t Saves(const std::map<std::string, std::string>& files) {
  std::set<std::string> dirs;
  for (const auto& [path, bytes] : files) dirs.insert(path.substr(0, path.find('/')));
  return dirs.size();
}

TEST_CASE("snapshots: a 1-node run between two 2-node runs keeps the first run's shards and nothing loads a mixture",
          "[integration][snapshots]") {
  TempDir dir;
  WriteFile(dir / "job.yaml", kJob);

  Outcome a = RunOn(dir, 2);
  INFO("run 1:\n" << a.err << a.out);
  REQUIRE(a.code == 0);
  const auto first0 = Step10(dir, "127.0.0.1"), first1 = Step10(dir, "127.0.0.2");
  REQUIRE(first0.size() == 1);  // shard 0 on node 1, shard 1 on node 2 (no replicas) ...
  REQUIRE(first1.size() == 1);
  const std::string first_save = first0.begin()->first.substr(0, first0.begin()->first.find('/'));
  CHECK(first1.begin()->first.rfind(first_save + "/", 0) == 0);  // ... in the directory of one save

  Outcome b = RunOn(dir, 1);
  INFO("run 2:\n" << b.err << b.out);
  REQUIRE(b.code == 0);
  CHECK(b.err.find("dslaunch: no complete snapshot or checkpoint left: starting from scratch (step 10 of an "
                   "earlier run lacks shard 1, on no node of this run)\n") != std::string::npos);
  CHECK(b.err.find("dslaunch: keeping 1 saved step of 1 earlier run in the nodes' checkpoint directories: this "
                   "run never prunes or overwrites them\n") != std::string::npos);
  // Its own save of step 10 sits beside the first run's, which is untouched.
  const auto second0 = Step10(dir, "127.0.0.1");
  CHECK(Saves(second0) == 2);
  CHECK(Unchanged(first0, second0));

  Outcome c = RunOn(dir, 2);
  INFO("run 3:\n" << c.err << c.out);
  REQUIRE(c.code == 0);
  // One whole save: the 1-node run's (the later one) resharded to 2 ranks,
  // or the first run's from both disks; every rank the same (dstrain
  // compares them before training).
  const bool later = c.err.find("resuming from step 10 of an earlier run (") != std::string::npos &&
                     c.err.find(", 1 rank at ZeRO stage 1): 1 shard from 127.0.0.1's disk\n") != std::string::npos;
  const bool first = c.err.find(", 2 ranks at ZeRO stage 1): 1 shard from 127.0.0.1's disk, 1 from 127.0.0.2's "
                                "disk\n") != std::string::npos;
  CHECK(later != first);
  CHECK(c.out.find("resumed from ") != std::string::npos);
  CHECK(c.out.find(later ? "(step 10, saved by 1 ranks at ZeRO stage 1, run " :
                           "(step 10, saved by 2 ranks at ZeRO stage 1, run ") != std::string::npos);
  // Nothing the nodes held changed (a node may now also hold a copy of a
  // shard it fetched, in that save's own directory).
  CHECK(Unchanged(second0, Step10(dir, "127.0.0.1")));
  CHECK(Unchanged(first1, Step10(dir, "127.0.0.2")));
}

}  // namespace
}  // namespace ds::testing
