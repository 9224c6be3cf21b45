#include "launcher/cmd/cli.h"

#include <cstdlib>

#include <catch2/catch.hpp>

#include "launcher/cmd/plan_from_cli.h"
#include "launcher/cmd/standby.h"
#include "tests/launcher/cmd/parse_cli.h"

namespace ds {
namespace {

using testing::Argv;
using testing::ErrorOf;
using testing::Parse;

TEST_CASE("cli: a job file") {
  CliOptions o = Parse({"--hostfile", "hf", "--dry-run", "job.yaml"});
  CHECK(o.hostfile == "hf");
  CHECK(o.dry_run);
  CHECK(o.job_file == "job.yaml");
  CHECK(o.command.empty());
  CHECK(o.launcher == "auto");
  CHECK(o.fanout == 32);
  CHECK(o.master_port == 0);
  CHECK_FALSE(o.ssh_port);
}

TEST_CASE("cli: --dry-run, --dry-run=short and --dry-run=full") {
  CHECK_FALSE(Parse({"--dry-run", "job.yaml"}).dry_run_short);
  CHECK(Parse({"--dry-run", "job.yaml"}).job_file == "job.yaml");  // a flag: the job file is not its value
  CliOptions s = Parse({"--dry-run=short", "job.yaml"});
  CHECK(s.dry_run);
  CHECK(s.dry_run_short);
  CHECK(Parse({"--dry_run=short", "--", "true"}).dry_run_short);
  CHECK(Parse({"--dry-run=full", "job.yaml"}).dry_run);
  CHECK_FALSE(Parse({"--dry-run=full", "job.yaml"}).dry_run_short);
  CHECK_FALSE(Parse({"job.yaml"}).dry_run);
  CHECK(ErrorOf({"--dry-run=brief", "job.yaml"}) ==
        "--dry-run=brief: expected --dry-run, --dry-run=short or --dry-run=full (see dslaunch --help)");
}

TEST_CASE("cli: DeepSpeed's form, script arguments pass through untouched") {
  CliOptions o = Parse({"-H", "hf", "-i", "w0:0,2@w1", "train.py", "--deepspeed", "--deepspeed_config", "ds.json",
                        "-H", "x", "--", "y"});
  CHECK(o.selection.include == "w0:0,2@w1");
  CHECK(o.command == Argv{"train.py", "--deepspeed", "--deepspeed_config", "ds.json", "-H", "x", "--", "y"});
  CHECK_FALSE(o.command_after_dashdash);
  CHECK_FALSE(o.deepspeed);
}

TEST_CASE("cli: --deepspeed options before the script are appended to it") {
  CliOptions o = Parse({"--deepspeed", "--deepspeed_config", "ds.json", "train.py", "--lr", "1"});
  CHECK(o.command == Argv{"train.py", "--lr", "1", "--deepspeed", "--deepspeed_config", "ds.json"});
  CHECK(ErrorOf({"--deepspeed", "job.yaml"}) ==
        "--deepspeed/--deepspeed_config apply to a script; with a job file, put them in its command");
}

TEST_CASE("cli: -- command") {
  CliOptions o = Parse({"-e", "w1", "--num_nodes", "2", "--", "train.py", "--dry-run"});
  CHECK(o.command == Argv{"train.py", "--dry-run"});
  CHECK(o.command_after_dashdash);
  CHECK_FALSE(o.dry_run);
  CHECK(o.selection.exclude == "w1");
  CHECK(o.selection.num_nodes == 2);
  CHECK(ErrorOf({"--"}) == "expected a command after '--'");
}

// "-hostfile h train.py" printed the help and exited 0, running nothing;
// "-master_port 1" said "unknown option '-aster_port'" (issue 33 item 7).
TEST_CASE("cli: a long option with one dash is an error naming the right spelling") {
  CHECK(ErrorOf({"-hostfile", "myhosts", "train.py"}) ==
        "'-hostfile': a long option takes two dashes: --hostfile (see dslaunch --help)");
  CHECK(ErrorOf({"-master_port", "1", "train.py"}) ==
        "'-master_port': a long option takes two dashes: --master_port (see dslaunch --help)");
  CHECK(ErrorOf({"-include=w0", "train.py"}) ==
        "'-include=w0': a long option takes two dashes: --include (see dslaunch --help)");
  // The job's own arguments are its business; short options stay short.
  CHECK(Parse({"train.py", "-hostfile", "x"}).command == Argv{"train.py", "-hostfile", "x"});
  CHECK(Parse({"-i", "w0", "train.py"}).selection.include == "w0");
  CHECK(Parse({"-h"}).help);
}

// Issue 33 item 7: argparse's manners, which torchrun's and DeepSpeed's
// users rely on.
TEST_CASE("cli: an unambiguous prefix of a long option is that option") {
  CliOptions o = Parse({"--nproc", "2", "--host", "hf", "--dry", "--master_p=29501", "x.yaml"});
  CHECK(o.selection.num_gpus == 2);
  CHECK(o.hostfile == "hf");
  CHECK(o.dry_run);
  CHECK(o.master_port == 29501);
  CHECK(Parse({"--nnod", "2", "x.yaml"}).selection.num_nodes == 2);
  // Errors quote the prefix as typed, not the option's first name.
  CHECK(ErrorOf({"--nproc", "0", "x.yaml"}) ==
        "--nproc: expected an integer between 1 and 1048576, or auto, gpu or cpu, got '0'");
  CHECK(ErrorOf({"--conn", "0", "x.yaml"}) == "--conn: expected a duration such as 10s or 500ms, got '0'");
  // The job's own arguments are never expanded.
  CHECK(Parse({"train.py", "--nproc", "2"}).command == Argv{"train.py", "--nproc", "2"});
}

TEST_CASE("cli: an ambiguous prefix is an error listing the candidates") {
  CHECK(ErrorOf({"--num", "2", "x.yaml"}) ==
        "'--num' could be --num_nodes or --num_gpus: write more of it (see dslaunch --help)");
  CHECK(ErrorOf({"--fan", "2", "x.yaml"}) ==
        "'--fan' could be --fanout or --fanout-tree: write more of it (see dslaunch --help)");
  CHECK(ErrorOf({"--master", "x", "x.yaml"}) ==
        "'--master' could be --master_addr or --master_port: write more of it (see dslaunch --help)");
}

TEST_CASE("cli: an unknown option gets 'did you mean'") {
  CHECK(ErrorOf({"--hostfle", "hf", "x.yaml"}) ==
        "unknown option '--hostfle' (did you mean --hostfile?) (see dslaunch --help)");
  CHECK(ErrorOf({"--nprocs_per_node=2", "x.yaml"}) ==
        "unknown option '--nprocs_per_node' (did you mean --nproc_per_node?) (see dslaunch --help)");
  CHECK(ErrorOf({"-q", "x.yaml"}) == "unknown option '-q' (see dslaunch --help)");
}

TEST_CASE("cli: an option without its value names the option as typed") {
  CHECK(ErrorOf({"--nproc-per-node"}) == "--nproc-per-node: expected a value (N|auto|gpu|cpu) after it "
                                         "(see dslaunch --help)");
  CHECK(ErrorOf({"-H"}) == "-H: expected a value (FILE) after it (see dslaunch --help)");
}

TEST_CASE("cli: every launch option") {
  CliOptions o = Parse({"--launcher", "ssh", "--master_addr", "10.0.0.1", "--master_port", "29500", "--log-dir",
                        "logs", "--ssh_port", "2222", "--fanout", "8", "--connect-timeout", "500ms",
                        "--agent-path", "/opt/dsagent", "--ship-agent", "--num_gpus", "2", "x.yaml"});
  CHECK(o.launcher == "ssh");
  CHECK(o.master_addr == "10.0.0.1");
  CHECK(o.master_port == 29500);
  CHECK(o.log_dir == "logs");
  REQUIRE(o.ssh_port);
  CHECK(*o.ssh_port == 2222);
  CHECK(o.fanout == 8);
  CHECK(o.connect_timeout == Approx(0.5));
  CHECK(o.agent_path == "/opt/dsagent");
  CHECK(o.ship_agent);
  CHECK(o.selection.num_gpus == 2);
  CHECK(Parse({"--nproc_per_node", "3", "--nnodes", "1", "a.yml"}).selection.num_gpus == 3);
}

TEST_CASE("cli: help and version") {
  CliOptions h = Parse({"--help"});
  CHECK(h.help);
  CHECK(h.help_text.find("--hostfile") != std::string::npos);
  CHECK(h.help_text.find("--nproc_per_node") != std::string::npos);
  CHECK(Parse({"-v"}).version);
  CHECK(Parse({"--version"}).version);
}

TEST_CASE("cli: errors name the option") {
  CHECK(ErrorOf({"--launcher", "mpi", "x.yaml"}).starts_with("--launcher: "));
  CHECK(ErrorOf({"--fanout", "0", "x.yaml"}).starts_with("--fanout: "));
  CHECK(ErrorOf({"--master_port", "70000", "x.yaml"}).starts_with("--master_port: "));
  CHECK(ErrorOf({"--max_restarts", "-1", "x.yaml"}).starts_with("--max_restarts: "));
  CHECK(ErrorOf({"--connect-timeout", "soon", "x.yaml"}) ==
        "--connect-timeout: expected a duration such as 10s or 500ms, got 'soon'");
  CHECK(ErrorOf({"--connect-timeout", "5000h", "x.yaml"}) ==
        "--connect-timeout: expected a duration between 10ms and 1h, got '5000h'");
  CHECK(ErrorOf({"--connect-timeout", "1ms", "x.yaml"}) ==
        "--connect-timeout: expected a duration between 10ms and 1h, got '1ms'");
  CHECK(ErrorOf({"--num_gpus", "2000000000", "x.yaml"}) ==
        "--num_gpus: expected an integer between 1 and 1048576, or auto, gpu or cpu, got '2000000000'");
  CHECK(ErrorOf({"--bogus", "x.yaml"}) == "unknown option '--bogus' (see dslaunch --help)");
  CHECK(ErrorOf({"--hostfile"}).starts_with("--hostfile: "));
  CHECK(ErrorOf({}) ==
        "expected a job file (job.yaml), a script (train.py ...) or '-- command ...' (see dslaunch --help)");
  CHECK(ErrorOf({"job.yaml", "extra"}) ==
        "unexpected 'extra' after the job file job.yaml; put the command in the job file or use -- command");
  CHECK(ParseCli({"--hostfile", "hf"}, /*require_job=*/false).ok());
}

TEST_CASE("cli: DSLAUNCH_* durations out of range are errors naming the variable") {
  ::setenv("DSLAUNCH_STOP_GRACE", "2000h", 1);
  CHECK(ErrorOf({"x.yaml"}) == "DSLAUNCH_STOP_GRACE='2000h': expected a duration between 0s and 1h");
  ::setenv("DSLAUNCH_STOP_GRACE", "later", 1);
  CHECK(ErrorOf({"x.yaml"}) == "DSLAUNCH_STOP_GRACE='later': expected a duration such as 500ms, 3s or 2m");
  ::unsetenv("DSLAUNCH_STOP_GRACE");
  ::setenv("DSLAUNCH_CONNECT_TIMEOUT", "0.0001s", 1);
  CHECK(ErrorOf({"x.yaml"}) == "DSLAUNCH_CONNECT_TIMEOUT='0.0001s': expected a duration between 10ms and 1h");
  ::unsetenv("DSLAUNCH_CONNECT_TIMEOUT");
  CHECK(ParseCli({"x.yaml"}).ok());
}

TEST_CASE("cli: plan from the command line") {
  MachineFacts local{.cpus = 2, .gpus = 0};
  // No hostfile: this machine, grown to --num_gpus like torchrun --nproc_per_node.
  auto p = PlanFromCli(Parse({"--nproc_per_node", "4", "--", "true"}), local);
  REQUIRE(p.ok());
  REQUIRE(p->nodes.size() == 1);
  CHECK(p->nodes[0].host.name == "localhost");
  CHECK(p->world_size == 4);
  CHECK_FALSE(p->use_gpus);
  CHECK(p->job.command == Argv{"true"});
  auto q = PlanFromCli(Parse({"--", "true"}), local);
  REQUIRE(q.ok());
  CHECK(q->world_size == 2);
  // Script form runs under python3; command-line values override.
  auto s = PlanFromCli(Parse({"--master_port", "1234", "--log-dir", "L", "--max-restarts", "3", "train.py"}),
                       local);
  REQUIRE(s.ok());
  CHECK(s->job.command == Argv{"python3", "-u", "train.py"});
  CHECK(s->job.network.master_port == 1234);
  CHECK(s->job.log_dir == "L");
  CHECK(s->job.elastic.max_restarts == 3);
  CHECK(q->job.elastic.max_restarts == 0);  // not given: the job file's (default 0)
  // A missing hostfile is an error, never a local run.
  auto m = PlanFromCli(Parse({"-H", "/nonexistent/hf", "--", "true"}), local);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message() == "hostfile /nonexistent/hf: No such file or directory");
  // The committed hostfile and example job.
  std::string src = DSLAUNCH_SOURCE_DIR;
  auto ex = PlanFromCli(Parse({"-H", src + "/hostfiles/local", src + "/examples/train.yaml"}), local);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  CHECK(ex->world_size == 6);
  CHECK(ex->hostfile_path == src + "/hostfiles/local");
}

// A standby that leads starts a replacement member's standby with its own
// arguments: the job's stay, its own standby flags go (given twice, the
// new standby's command line was refused).
TEST_CASE("standby argv: a standby's arguments give the job's, less its own standby flags", "[unit]") {
  const CliOptions o = Parse({"--standby", "abc123", "--standby-index", "1", "--standby-cwd", "/w", "--hostfile",
                              "hf", "job.yaml"});
  const std::vector<std::string> argv = StandbyArgv(o, "abc123", 3, "/w");
  REQUIRE(argv.size() == 10);
  CHECK(std::vector<std::string>(argv.begin() + 1, argv.end()) ==
        std::vector<std::string>{"--standby", "abc123", "--standby-index", "3", "--standby-cwd", "/w", "--hostfile",
                                 "hf", "job.yaml"});
  CHECK(StandbyArgv(Parse({"--standby=abc123", "--standby-index=1", "job.yaml"}), "abc123", 4, "/w").back() ==
        "job.yaml");
  CHECK(StandbyArgv(Parse({"--standby=abc123", "--standby-index=1", "job.yaml"}), "abc123", 4, "/w").size() == 8);
}

}  // namespace
}  // namespace ds
