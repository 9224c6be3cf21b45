#include "launcher/cmd/dry_run.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

LaunchPlan TwoNodes(JobSpec job) {
  auto hf = ParseHostfile("a slots=2 ssh_port=2222 user=me\nb slots=1\nc slots=1\n", "hf");
  REQUIRE(hf.ok());
  auto hosts = SelectHosts(*hf, {});
  REQUIRE(hosts.ok());
  auto plan = MakePlan(*hosts, job, false);
  REQUIRE(plan.ok());
  plan->hostfile_path = "hf";
  return *plan;
}

TEST_CASE("dry run: per node host, ranks, env and command") {
  JobSpec job;
  job.command = {"python3", "-u", "train.py", "--name", "my run"};
  job.env = {{"WANDB_API_KEY", "abc123"}, {"HF_TOKEN", "hf_x"}, {"PLAIN", "visible"}};
  job.elastic.max_nodes = 2;
  std::string out = FormatDryRun(TwoNodes(job), {.launcher = "ssh", .inherited = {}});
  CHECK(out.starts_with("dslaunch dry run: 2 node(s), 3 worker(s), launcher ssh\n"));
  CHECK(out.find("\nnode 0: a (hf:1), ranks 0-1, slots 0,1\n  ssh: user me port 2222\n") != std::string::npos);
  CHECK(out.find("\nnode 1: b (hf:2), ranks 2, slots 0\n") != std::string::npos);
  CHECK(out.find("  per worker: RANK=ROLE_RANK=0-1 LOCAL_RANK=0-1\n") != std::string::npos);
  CHECK(out.find("    WORLD_SIZE=3\n") != std::string::npos);
  CHECK(out.find("    MASTER_ADDR=a\n") != std::string::npos);
  CHECK(out.find("    MASTER_PORT=(reserved at launch)\n") != std::string::npos);
  CHECK(out.find("    OMP_NUM_THREADS=(cores on the node / 2, at least 1)\n") != std::string::npos);
  CHECK(out.find("  command: python3 -u train.py --name 'my run'\n") != std::string::npos);
  // Secrets are masked, other values shown.
  CHECK(out.find("abc123") == std::string::npos);
  CHECK(out.find("hf_x") == std::string::npos);
  CHECK(out.find("    WANDB_API_KEY=****\n") != std::string::npos);
  CHECK(out.find("    HF_TOKEN=****\n") != std::string::npos);
  CHECK(out.find("    PLAIN=visible\n") != std::string::npos);
  // Hosts beyond max_nodes are standbys.
  CHECK(out.find("\nstandby: c (hf:3), slots 0 (joins when a node is lost; elastic.max_nodes 2)\n") !=
        std::string::npos);
}

TEST_CASE("dry run: a fixed master port and user-set OMP_NUM_THREADS are shown as is") {
  JobSpec job;
  job.command = {"true"};
  job.network.master_port = 29500;
  std::string out = FormatDryRun(TwoNodes(job), {.inherited = {{"OMP_NUM_THREADS", "3"}}});
  CHECK(out.find("    MASTER_PORT=29500\n") != std::string::npos);
  CHECK(out.find("OMP_NUM_THREADS") == std::string::npos);  // inherited: dslaunch adds nothing
  job.env = {{"OMP_NUM_THREADS", "6"}};
  out = FormatDryRun(TwoNodes(job), {});
  CHECK(out.find("    OMP_NUM_THREADS=6\n") != std::string::npos);
}

TEST_CASE("dry run: which hostfile, --local_rank and core binding") {
  JobSpec job;
  job.command = {"python3", "-u", "train.py"};
  job.local_rank_arg = true;
  job.bind_cores = true;
  job.core_list = "0-3";
  LaunchPlan plan = TwoNodes(job);
  std::string out = FormatDryRun(plan, {.hostfile_source = "DSLAUNCH_DEFAULT_HOSTFILE"});
  CHECK(out.find("\n  hostfile: hf (DSLAUNCH_DEFAULT_HOSTFILE, no --hostfile given)\n") != std::string::npos);
  CHECK(out.find("  command: python3 -u train.py --local_rank=(LOCAL_RANK)\n") != std::string::npos);
  // DeepSpeed's place: right after the script, before the user's arguments.
  plan.job.command = {"python3", "-u", "train.py", "--deepspeed", "--lr", "1"};
  plan.job.local_rank_at = 3;
  CHECK(FormatDryRun(plan, {}).find("  command: python3 -u train.py --local_rank=(LOCAL_RANK) --deepspeed --lr 1\n") !=
        std::string::npos);
  CHECK(out.find("  bind cores: each local rank to its share of cores 0-3\n") != std::string::npos);
  CHECK(FormatDryRun(plan, {.hostfile_source = "--hostfile"}).find("\n  hostfile: hf\n") != std::string::npos);
  plan.hostfile_path.clear();
  CHECK(FormatDryRun(plan, {}).find("\n  hostfile: none, this machine\n") != std::string::npos);
}

TEST_CASE("dry run: the short form is the header, the master, the command once and a line per node") {
  JobSpec job;
  job.command = {"python3", "-u", "train.py"};
  job.env = {{"HF_TOKEN", "hf_x"}};
  job.elastic.max_nodes = 2;
  const std::string out = FormatDryRun(TwoNodes(job), {.launcher = "ssh", .inherited = {}, .short_form = true});
  CHECK(out ==
        "dslaunch dry run: 2 node(s), 3 worker(s), launcher ssh\n"
        "  job: from the command line\n"
        "  hostfile: hf\n"
        "  elastic: min_nodes 1, max_nodes 2, max_restarts 0\n"
        "  master: a:(reserved at launch)\n"
        "  command: python3 -u train.py\n"
        "node 0: a (hf:1), ranks 0-1, slots 0,1, ssh user me, ssh port 2222\n"
        "node 1: b (hf:2), ranks 2, slots 0\n"
        "\n"
        "standby: c (hf:3), slots 0 (joins when a node is lost; elastic.max_nodes 2)\n"
        "(every variable of every node: --dry-run)\n");
}

TEST_CASE("dry run: a job that leads in a site's etcd says where, with which certificate, and what it does not do yet") {
  JobSpec job;
  job.command = {"true"};
  const std::string plain = FormatDryRun(TwoNodes(job), {.short_form = true});
  CHECK(plain.find("coordinator:") == std::string::npos);  // nothing without coordinator:
  job.coordinator.etcd = {"e1:2379", "e2:2379"};
  job.coordinator.cert = "/etc/etcd/client.pem";
  job.coordinator.ca = "/etc/etcd/ca.pem";
  const std::string out = FormatDryRun(TwoNodes(job), {.short_form = true});
  CHECK(out.find("  elastic: min_nodes 1, max_nodes all, max_restarts 0\n"
                 "  coordinator: leads the job in etcd e1:2379, e2:2379 (client certificate /etc/etcd/client.pem, CA "
                 "/etc/etcd/ca.pem), keys under /dslaunch/<job id>/; no standby takes over yet\n") != std::string::npos);
}

TEST_CASE("dry run: it says once what else a worker's environment holds, which the launcher decides") {
  JobSpec job;
  job.command = {"true"};
  const std::string local = FormatDryRun(TwoNodes(job), {.launcher = "local (auto)"});
  CHECK(local.find("\n  environment: the variables below, and the rest of this shell's environment (the local "
                   "launcher passes it on; over ssh a worker gets only the variables below and the node's login "
                   "environment: docs/usage.md, \"Environment variables\")\n\nnode 0: ") != std::string::npos);
  const std::string ssh = FormatDryRun(TwoNodes(job), {.launcher = "ssh"});
  CHECK(ssh.find("\n  environment: the variables below and the node's login environment (not the rest of this "
                 "shell's: docs/usage.md, \"Environment variables\")\n") != std::string::npos);
  CHECK(FormatDryRun(TwoNodes(job), {.launcher = "ssh", .short_form = true}).find("environment:") == std::string::npos);
}

TEST_CASE("dry run: IsSecretName") {
  for (const char* s : {"DSLAUNCH_STORE_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "OPENAI_API_KEY", "KEY",
                        "my_token", "GOOGLE_APPLICATION_CREDENTIALS"})
    CHECK(IsSecretName(s));
  for (const char* s : {"RANK", "MONKEY", "KEYBOARD", "NCCL_SOCKET_IFNAME", "PATH"}) CHECK_FALSE(IsSecretName(s));
}

}  // namespace
}  // namespace ds
