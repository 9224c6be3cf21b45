// JobFromCli / PlanFromCli with the DeepSpeed and torchrun flags: what the
// JobSpec and the plan come out as. Files in a temp dir; nothing runs.
#include "launcher/cmd/plan_from_cli.h"

#include <cstdlib>

#include <catch2/catch.hpp>

#include "launcher/cmd/spawner_choice.h"
#include "launcher/config/coordinator_spec.h"
#include "tests/test_util/files.h"
#include "tests/test_util/temp_dir.h"
#include "tests/launcher/cmd/parse_cli.h"

namespace ds {
namespace {

using testing::Argv;
using testing::Parse;

JobSpec Job(const Argv& args) {
  auto j = JobFromCli(Parse(args));
  INFO(j.status().message());
  REQUIRE(j.ok());
  return *j;
}

LaunchPlan Plan(const CliOptions& cli, MachineFacts local = {.cpus = 2, .gpus = 0}, PlanNotes* notes = nullptr) {
  auto p = PlanFromCli(cli, local, notes);
  INFO(p.status().message());
  REQUIRE(p.ok());
  return *p;
}

std::string PlanError(const CliOptions& cli, MachineFacts local = {.cpus = 2, .gpus = 0}) {
  auto p = PlanFromCli(cli, local);
  REQUIRE_FALSE(p.ok());
  return p.status().message();
}

TEST_CASE("JobFromCli: DeepSpeed's script form gets --local_rank, torchrun's forms do not") {
  CHECK(Job({"train.py", "--deepspeed", "--deepspeed_config", "ds.json"}).local_rank_arg);
  CHECK(Job({"train.py", "--deepspeed_config=ds.json"}).local_rank_arg);
  CHECK(Job({"--deepspeed", "train.py"}).local_rank_arg);  // the flag before the script is appended to it
  CHECK(Job({"--deepspeed_config", "ds.json", "train.py"}).local_rank_arg);
  // Where it goes: right after the script (DeepSpeed's launcher: script, --local_rank=N, then the user's arguments).
  CHECK(Job({"train.py", "--deepspeed", "--lr", "1"}).local_rank_at == 3);  // python3 -u train.py | ...
  CHECK_FALSE(Job({"train.py", "--lr", "1"}).local_rank_arg);  // no DeepSpeed flag: torchrun-style
  CHECK_FALSE(Job({"--no_local_rank", "train.py", "--deepspeed"}).local_rank_arg);
  CHECK_FALSE(Job({"-m", "pkg.train", "--deepspeed"}).local_rank_arg);
  CHECK_FALSE(Job({"--no-python", "train.py", "--deepspeed"}).local_rank_arg);
  CHECK_FALSE(Job({"--", "python3", "train.py", "--deepspeed"}).local_rank_arg);
  CHECK_FALSE(Job({"--", "train.py", "--deepspeed"}).local_rank_arg);
  CHECK_FALSE(Job({"run.sh", "--deepspeed"}).local_rank_arg);
  // A job file says it itself; --no_local_rank still turns it off.
  testing::TempDir dir("dsl-cli");
  testing::WriteFile(dir / "job.yaml", "command: [python3, train.py]\nlocal_rank_arg: true\n");
  CHECK(Job({dir / "job.yaml"}).local_rank_arg);
  CHECK_FALSE(Job({"--no_local_rank", dir / "job.yaml"}).local_rank_arg);
  testing::WriteFile(dir / "plain.yaml", "command: [python3, train.py, --deepspeed]\n");
  CHECK_FALSE(Job({dir / "plain.yaml"}).local_rank_arg);
}

TEST_CASE("JobFromCli: -m, --no-python and PYTHON_EXEC shape the command") {
  CHECK(Job({"-m", "pkg.mod", "a"}).command == Argv{"python3", "-u", "-m", "pkg.mod", "a"});
  CHECK(Job({"-m", "--", "pkg.mod", "a"}).command == Argv{"python3", "-u", "-m", "pkg.mod", "a"});
  CHECK(Job({"--no-python", "train.py", "a"}).command == Argv{"train.py", "a"});
  CHECK(Job({"train.py", "a"}).command == Argv{"python3", "-u", "train.py", "a"});
  ::setenv("PYTHON_EXEC", "/opt/py/bin/python3.12", 1);
  CHECK(Job({"train.py"}).command == Argv{"/opt/py/bin/python3.12", "-u", "train.py"});
  CHECK(Job({"-m", "pkg"}).command == Argv{"/opt/py/bin/python3.12", "-u", "-m", "pkg"});
  CHECK(Job({"--", "train.py"}).command == Argv{"train.py"});
  ::unsetenv("PYTHON_EXEC");
}

TEST_CASE("JobFromCli: elastic bounds, --elastic_training and binding") {
  JobSpec mm = Job({"--nnodes", "2:4", "--", "true"});
  CHECK(mm.elastic.min_nodes == 2);
  CHECK(mm.elastic.min_nodes_set);
  CHECK(mm.elastic.max_nodes == 4);
  CHECK(mm.elastic.max_restarts == 0);
  CHECK_FALSE(Job({"--nnodes", "2", "--", "true"}).elastic.min_nodes_set);
  JobSpec ds = Job({"--elastic_training", "--min_elastic_nodes", "1", "--max_elastic_nodes", "3", "--", "true"});
  CHECK(ds.elastic.max_restarts == 100);  // DeepSpeed's elastic agent
  CHECK(ds.elastic.min_nodes == 1);
  CHECK(ds.elastic.min_nodes_set);
  CHECK(ds.elastic.max_nodes == 3);
  CHECK(Job({"--elastic_training", "--max_restarts", "0", "--", "true"}).elastic.max_restarts == 0);
  CHECK(Job({"--elastic_training", "--max-restarts", "7", "--", "true"}).elastic.max_restarts == 7);
  testing::TempDir dir("dsl-cli");
  testing::WriteFile(dir / "job.yaml", "command: [x]\nelastic: {max_restarts: 2, min_nodes: 2, max_nodes: 3}\n");
  CHECK(Job({"--elastic_training", dir / "job.yaml"}).elastic.max_restarts == 2);  // the job file's
  CHECK(Job({"--max_elastic_nodes", "5", dir / "job.yaml"}).elastic.max_nodes == 5);
  auto bad = JobFromCli(Parse({"--max_elastic_nodes", "1", dir / "job.yaml"}));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "elastic: min_nodes (2) is more than max_nodes (1) once the command line's bounds (--nnodes MIN:MAX, "
        "--min_elastic_nodes, --max_elastic_nodes) replace the job file's");

  JobSpec b = Job({"--bind_cores_to_rank", "--", "true"});
  CHECK(b.bind_cores);
  CHECK(b.core_list.empty());
  JobSpec l = Job({"--bind_core_list", "0-3,8-11", "--", "true"});
  CHECK(l.bind_cores);
  CHECK(l.core_list == "0-3,8-11");
  CHECK_FALSE(Job({"--", "true"}).bind_cores);
  CHECK(Job({"--enable_each_rank_log", "L", "--", "true"}).log_dir == "L");
  CHECK(Job({"--pty", "--", "true"}).pty);
  CHECK_FALSE(Job({"--", "true"}).pty);
}

TEST_CASE("JobFromCli: --rdzv-backend etcd's endpoint is coordinator.etcd, unless the job file has coordinator:") {
  JobSpec j = Job({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e0:2379", "--", "true"});
  CHECK(j.coordinator.on());
  CHECK(j.coordinator.etcd == Argv{"e0:2379"});
  CHECK(j.coordinator.replicas == 0);
  CHECK(j.coordinator.prefix == "/dslaunch/");
  CHECK(j.coordinator.at == "--rdzv-backend etcd --rdzv-endpoint e0:2379");
  CHECK(j.coordinator.etcd_at == j.coordinator.at);
  CHECK_FALSE(Job({"--", "true"}).coordinator.on());
  testing::TempDir dir("dsl-cli");
  testing::WriteFile(dir / "plain.yaml", "command: [x]\n");
  CHECK(Job({"--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "e0", dir / "plain.yaml"}).coordinator.etcd ==
        Argv{"e0:2379"});
  testing::WriteFile(dir / "job.yaml", "command: [x]\ncoordinator:\n  replicas: 3\n");
  CHECK(Job({dir / "job.yaml"}).coordinator.replicas == 3);
  auto refused = PlanFromCli(Parse({dir / "job.yaml"}), {.cpus = 2, .gpus = 0});  // a member per host: 3 hosts
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find(dir / "job.yaml" + ":3:13: coordinator.replicas is 3 but the job has 1 "
                                                           "host") == 0);
  testing::WriteFile(dir / "etcd.yaml", "command: [x]\ncoordinator:\n  etcd: [e0:2379]\n");
  PlanNotes notes;  // what a run does with it today: the plan says so
  Plan(Parse({dir / "etcd.yaml"}), {.cpus = 2, .gpus = 0}, &notes);
  CHECK(notes.notices == Argv{dir / "etcd.yaml" + ":2:1: coordinator.etcd: " + kEtcdNotYet});
  Plan(Parse({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e0:2379", dir / "plain.yaml"}), {.cpus = 2, .gpus = 0},
       &notes);
  CHECK(notes.notices.empty());  // the command line's notice said it
  auto both = JobFromCli(Parse({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e0:2379", dir / "job.yaml"}));
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message() ==
        "--rdzv-backend etcd --rdzv-endpoint e0:2379 and the job file's coordinator: (" + (dir / "job.yaml") +
            ":2:1) both set the coordinator's failover; give one of them (the job file's section can list several "
            "endpoints and TLS files)");
}

TEST_CASE("PlanFromCli: --nproc_per_node auto, gpu, cpu and a number on this machine") {
  MachineFacts cpu_box{.cpus = 3, .gpus = 0};
  MachineFacts gpu_box{.cpus = 16, .gpus = 2};
  CHECK(Plan(Parse({"--nproc_per_node", "auto", "--", "true"}), cpu_box).world_size == 3);
  LaunchPlan ga = Plan(Parse({"--nproc_per_node", "auto", "--", "true"}), gpu_box);
  CHECK(ga.world_size == 2);
  CHECK(ga.use_gpus);
  CHECK(Plan(Parse({"--nproc-per-node", "gpu", "--", "true"}), gpu_box).world_size == 2);
  CHECK(PlanError(Parse({"--nproc-per-node", "gpu", "--", "true"}), cpu_box) ==
        "--nproc-per-node gpu: no GPU visible on this machine (/proc/driver/nvidia/gpus lists none); use cpu, "
        "auto or a number");
  LaunchPlan gc = Plan(Parse({"--nproc_per_node", "cpu", "--", "true"}), gpu_box);
  CHECK(gc.world_size == 16);
  CHECK_FALSE(gc.use_gpus);
  CHECK(Plan(Parse({"--nproc_per_node", "cpu", "--", "true"}), cpu_box).world_size == 3);
  CHECK(Plan(Parse({"--nproc_per_node", "4096", "--", "true"}), cpu_box).world_size == 4096);
  CHECK(PlanError(Parse({"--nproc_per_node", "100000", "--", "true"}), cpu_box) ==
        "--nproc_per_node: expected an integer between 1 and 4096 without a hostfile (workers on this machine), "
        "got '100000'");
  CHECK(PlanError(Parse({"--num_gpus", "4097", "--", "true"}), cpu_box).starts_with(
      "--num_gpus: expected an integer between 1 and 4096 without a hostfile"));
}

TEST_CASE("PlanFromCli: with a hostfile auto, gpu and cpu mean each host's slots=") {
  testing::TempDir dir("dsl-cli");
  testing::WriteFile(dir / "hf", "a slots=3\nb slots=1\n");
  for (const char* mode : {"auto", "gpu", "cpu"}) {
    INFO(mode);
    LaunchPlan p = Plan(Parse({"-H", dir / "hf", "--nproc_per_node", mode, "--", "true"}));
    CHECK(p.world_size == 4);
  }
  CHECK(Plan(Parse({"-H", dir / "hf", "--nproc_per_node", "1", "--", "true"})).world_size == 2);
}

TEST_CASE("PlanFromCli: DSLAUNCH_DEFAULT_HOSTFILE is used when it exists, unless --launcher local") {
  testing::TempDir dir("dsl-cli");
  testing::WriteFile(dir / "default_hf", "127.0.0.1 slots=1\n127.0.0.2 slots=2 max_slots=4\n");
  ::setenv("DSLAUNCH_DEFAULT_HOSTFILE", (dir / "default_hf").c_str(), 1);
  PlanNotes notes;
  LaunchPlan p = Plan(Parse({"--", "true"}), {.cpus = 2, .gpus = 0}, &notes);
  CHECK(p.world_size == 3);
  CHECK(p.hostfile_path == dir / "default_hf");
  CHECK(notes.hostfile_source == "DSLAUNCH_DEFAULT_HOSTFILE");
  CHECK(notes.notices == Argv{dir / "default_hf" + ":2: ignoring max_slots=4 (OpenMPI's limit; dslaunch runs one "
                                                  "worker per selected slot), here and on later lines"});
  // --launcher local never reads it; --hostfile wins over it.
  PlanNotes local_notes;
  LaunchPlan l = Plan(Parse({"--launcher", "local", "--", "true"}), {.cpus = 2, .gpus = 0}, &local_notes);
  CHECK(l.hostfile_path.empty());
  CHECK(l.nodes[0].host.name == "localhost");
  CHECK(local_notes.hostfile_source.empty());
  testing::WriteFile(dir / "hf", "w0 slots=1\n");
  PlanNotes given;
  CHECK(Plan(Parse({"-H", dir / "hf", "--", "true"}), {}, &given).hostfile_path == dir / "hf");
  CHECK(given.hostfile_source == "--hostfile");
  // Absent (or not a file): this machine, as before.
  ::setenv("DSLAUNCH_DEFAULT_HOSTFILE", (dir / "missing").c_str(), 1);
  CHECK(Plan(Parse({"--", "true"})).hostfile_path.empty());
  ::setenv("DSLAUNCH_DEFAULT_HOSTFILE", dir.path().c_str(), 1);
  CHECK(Plan(Parse({"--", "true"})).hostfile_path.empty());
  ::unsetenv("DSLAUNCH_DEFAULT_HOSTFILE");
}

TEST_CASE("spawner choice: --force_multi and --launcher_args") {
  LaunchPlan local = Plan(Parse({"--launcher", "local", "--", "true"}));
  CHECK(ResolveLauncher("auto", local) == "local");
  CHECK(ResolveLauncher("auto", local, /*force_multi=*/true) == "ssh");
  CHECK(ResolveLauncher("local", local, true) == "local");
  auto s = MakeSpawner("local", local, SshOptions{}, 1.0, {"-R", "ssh"});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message() ==
        "--launcher_args: applies to --launcher pdsh, slurm, openmpi and mpich only, and this job starts its agents "
        "with local; for ssh set the job file's ssh: section (port, connect_timeout, strict_host_key_checking) or an "
        "ssh config file (DSLAUNCH_SSH_CONFIG)");
  CHECK(MakeSpawner("pdsh", local, SshOptions{}, 1.0, {"-R", "ssh"}).ok());
  CHECK(MakeSpawner("local", local, SshOptions{}, 1.0).ok());
}

// `--nproc-per-node 8` was reported as `--num_gpus 8` (issue 33 item 7):
// the selection's errors name the options as typed.
TEST_CASE("PlanFromCli: selection errors quote the option as typed") {
  testing::TempDir dir;
  const std::string hf = dir / "hf";
  testing::WriteFile(hf, "w0 slots=4\nw1 slots=4\n");
  CHECK(PlanError(Parse({"-H", hf, "--nproc-per-node", "8", "--", "true"})) ==
        "--nproc-per-node 8: host 'w0' has only 4 selected slot(s)");
  CHECK(PlanError(Parse({"-H", hf, "--nproc", "8", "--", "true"})) == "--nproc 8: host 'w0' has only 4 selected slot(s)");
  CHECK(PlanError(Parse({"-H", hf, "--nnodes", "3", "--", "true"})) == "--nnodes 3: only 2 host(s) selected");
  CHECK(PlanError(Parse({"-H", hf, "-i", "w9", "--", "true"})).rfind("-i: unknown host 'w9'", 0) == 0);
}

TEST_CASE("PlanFromCli: --local-ranks-filter naming a local rank no node has says so") {
  testing::TempDir dir;
  const std::string hf = dir / "hf";
  testing::WriteFile(hf, "w0 slots=2\nw1 slots=2\n");
  CHECK(PlanError(Parse({"-H", hf, "--local-ranks-filter", "4", "--", "true"})) ==
        "--local-ranks-filter 4: no node has local rank 4 (the most a node has is 2: local ranks 0-1)");
  CHECK(PlanError(Parse({"-H", hf, "--local-ranks-filter", "0,2,5", "--", "true"})) ==
        "--local-ranks-filter 0,2,5: no node has local ranks 2, 5 (the most a node has is 2: local ranks 0-1)");
  CHECK(PlanError(Parse({"-H", hf, "--nproc_per_node", "1", "--local-ranks-filter", "1", "--", "true"})) ==
        "--local-ranks-filter 1: no node has local rank 1 (the most a node has is 1: local rank 0)");
  CHECK(Plan(Parse({"-H", hf, "--local-ranks-filter", "1", "--", "true"})).world_size == 4);
  // A standby with more slots has the rank: no error.
  testing::WriteFile(hf, "w0 slots=1\nw1 slots=3\n");
  testing::WriteFile(dir / "job.yaml", "command: [x]\nelastic: {max_nodes: 1}\n");
  CHECK(Plan(Parse({"-H", hf, "--local-ranks-filter", "2", dir / "job.yaml"})).standbys.size() == 1);
}

}  // namespace
}  // namespace ds
