#include "launcher/config/job_spec.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

namespace ds {
namespace {

std::string ErrorOf(const std::string& text) {
  auto r = ParseJobFile(text, "train.yaml");
  REQUIRE_FALSE(r.ok());
  const std::string& m = r.status().message();
  return m.substr(0, m.find('\n'));  // the echoed line and caret: "job file: errors echo ..." below
}

JobSpec Parse(const std::string& text) {
  auto r = ParseJobFile(text, "train.yaml");
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("job file: every key") {
  JobSpec j = Parse(R"(
command: [python3, train.py, --lr, "0.1"]
procs_per_node: 2
env:
  ZED: "1"
  ALPHA: two words
  NUM: 3.50
working_dir: /srv/job
log_dir: logs
checkpoint_dir: /ckpt
elastic:
  min_nodes: 2
  max_nodes: 4
  max_restarts: 3
  heartbeat_interval: 500ms
  heartbeat_timeout: 3s
  hang_timeout: 2m
  rejoin: false
  max_host_failures: 2
  host_cooldown: 10m
network:
  interface: eth1
  master_addr: 10.0.0.1
  master_port: 29500
)");
  CHECK(j.path == "train.yaml");
  CHECK(j.command == std::vector<std::string>{"python3", "train.py", "--lr", "0.1"});
  CHECK(j.trainer_yaml.empty());
  CHECK(j.procs_per_node == 2);
  // Kept in file order, values as written.
  REQUIRE(j.env.size() == 3);
  CHECK(j.env[0] == std::pair<std::string, std::string>{"ZED", "1"});
  CHECK(j.env[1] == std::pair<std::string, std::string>{"ALPHA", "two words"});
  CHECK(j.env[2] == std::pair<std::string, std::string>{"NUM", "3.50"});
  CHECK(j.working_dir == "/srv/job");
  CHECK(j.log_dir == "logs");
  CHECK(j.checkpoint.dir == "/ckpt");
  CHECK(j.elastic.min_nodes == 2);
  CHECK(j.elastic.max_nodes == 4);
  CHECK(j.elastic.max_restarts == 3);
  CHECK(j.elastic.heartbeat_interval == Approx(0.5));
  CHECK(j.elastic.heartbeat_timeout == Approx(3.0));
  CHECK(j.elastic.hang_timeout == Approx(120.0));
  CHECK(j.elastic.max_host_failures == 2);
  CHECK(j.elastic.host_cooldown == Approx(600.0));
  CHECK_FALSE(j.elastic.rejoin);
  CHECK(j.network.interface == "eth1");
  CHECK(j.network.master_addr == "10.0.0.1");
  CHECK(j.network.master_port == 29500);
}

TEST_CASE("job file: booleans in any YAML 1.1 spelling") {
  CHECK_FALSE(Parse("command: [x]\nelastic: {rejoin: False}\n").elastic.rejoin);
  CHECK(Parse("command: [x]\nelastic: {rejoin: YES}\n").elastic.rejoin);
}

TEST_CASE("job file: defaults") {
  JobSpec j = Parse("command: [true]\n");
  CHECK(j.procs_per_node == 0);
  CHECK(j.elastic.min_nodes == 1);
  CHECK(j.elastic.max_nodes == 0);
  CHECK(j.elastic.rejoin);
  CHECK(j.network.master_port == 0);
}

TEST_CASE("job file: metrics_port, metrics_addr and progress_interval (seeing the job)") {
  JobSpec d = Parse("command: [true]\n");
  CHECK(d.metrics_port == -1);
  CHECK(d.metrics_addr == "127.0.0.1");
  CHECK(d.progress_interval == 60);
  JobSpec j = Parse("command: [true]\nmetrics_port: 9100\nmetrics_addr: 0.0.0.0\nprogress_interval: 5m\n");
  CHECK(j.metrics_port == 9100);
  CHECK(j.metrics_addr == "0.0.0.0");
  CHECK(j.progress_interval == 300);
  CHECK(ErrorOf("command: [true]\nmetrics_port: 70000\n").find(
            "'metrics_port': expected an integer between 0 and 65535, got '70000'") != std::string::npos);
}

TEST_CASE("job file: a command string runs through the shell") {
  CHECK(Parse("command: echo $RANK\n").command == std::vector<std::string>{"/bin/sh", "-c", "echo $RANK"});
}

TEST_CASE("job file: trainer is checked and kept as YAML text") {
  JobSpec j = Parse("trainer:\n  model: {layers: [784, 64, 10]}\n  config:\n    train_batch_size: 32\n");
  CHECK(j.command.empty());
  CHECK(j.trainer_yaml.find("layers: [784, 64, 10]") != std::string::npos);
  CHECK(j.trainer_yaml.find("train_batch_size: 32") != std::string::npos);
}

TEST_CASE("job file: trainer typos are found at load with the job file's line and column") {
  CHECK(ErrorOf("trainer:\n  model: {layers: [784, 10], activaton: relu}\n") ==
        "train.yaml:2:30: unknown key 'activaton' in trainer.model (did you mean 'activation'?)");
  CHECK(ErrorOf("procs_per_node: 1\ntrainer:\n  epochs: 1\n  config:\n    train_batch_size: 8\n"
                "    zero_optimization: {stag: 1}\n") ==
        "train.yaml:6:25: unknown key 'stag' in trainer.config.zero_optimization (did you mean 'stage'?)");
  CHECK(ErrorOf("trainer:\n  config: {train_batch_siz: 8}\n") ==
        "train.yaml:2:12: unknown key 'train_batch_siz' in trainer.config (did you mean 'train_batch_size'?)");
  CHECK(ErrorOf("trainer:\n  backend: ncl\n") ==
        "train.yaml:2: 'trainer.backend' expects gloo or nccl, got 'ncl' (did you mean 'nccl'?)");
  CHECK(ErrorOf("trainer: [1, 2]\n") == "train.yaml:1:10: expected a mapping for 'trainer'");
}

TEST_CASE("job file: LoadJobFile names trainer.model and trainer.config typos word for word") {
  char tmpl[] = "/tmp/jobspec-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/job.yaml";
  std::ofstream(path) << "trainer:\n  model:\n    layers: [784, 10]\n    activaton: relu\n";
  auto model = LoadJobFile(path);
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().message() ==
        path + ":4:5: unknown key 'activaton' in trainer.model (did you mean 'activation'?)\n"
               "    activaton: relu\n"
               "    ^");
  std::ofstream(path) << "trainer:\n  config:\n    train_batch_size: 8\n"
                         "    optimizer: {type: Adam, params: {lr: 0.1, weight_decy: 0}}\n";
  auto config = LoadJobFile(path);
  REQUIRE_FALSE(config.ok());
  CHECK(config.status().message() ==
        path + ":4:47: unknown key 'weight_decy' in trainer.config.optimizer.params "
               "(did you mean 'weight_decay'?)\n"
               "    optimizer: {type: Adam, params: {lr: 0.1, weight_decy: 0}}\n"
               "                                              ^");
  std::filesystem::remove_all(dir);
}

TEST_CASE("job file: trainer checks that need the world size wait for the plan") {
  // train_batch_size 10 cannot be split over 4 ranks, but the job file alone
  // does not say how many ranks there will be.
  JobSpec j = Parse("trainer:\n  model: {layers: [784, 10]}\n  config: {train_batch_size: 10}\n");
  CHECK(CheckTrainerForWorld(j, 2).ok());
  Status st = CheckTrainerForWorld(j, 4);
  CHECK(st.message() == "train.yaml trainer.config: train_batch_size (10) is not divisible by world size (4)");
  // A ds_config.json named by path is read where the workers run, not here.
  CHECK(Parse("trainer:\n  config: /nonexistent/ds_config.json\n").trainer_yaml.find("ds_config.json") !=
        std::string::npos);
}

TEST_CASE("job file: unknown keys name line:col and suggest") {
  // One format for every config file (runtime/config/yaml_keys.h): the key
  // path after "in", the suggestion only for a near miss.
  CHECK(ErrorOf("command: [x]\nprocs_per_nod: 2\n") ==
        "train.yaml:2:1: unknown key 'procs_per_nod' (did you mean 'procs_per_node'?)");
  CHECK(ErrorOf("command: [x]\nelastic:\n  min_node: 1\n") ==
        "train.yaml:3:3: unknown key 'min_node' in elastic (did you mean 'min_nodes'?)");
  CHECK(ErrorOf("command: [x]\nnetwork: {iface: eth0}\n").starts_with(
        "train.yaml:2:11: unknown key 'iface' in network"));
  CHECK(ErrorOf("command: [x]\nbanana: 1\n") == "train.yaml:2:1: unknown key 'banana'");
}

TEST_CASE("job file: YAML syntax errors show line:col") {
  CHECK(ErrorOf("command: [x\nenv: {\n").starts_with("train.yaml:"));
  CHECK(ErrorOf("command: [a, b]\n  bad: indent\n") == "train.yaml:2:3: YAML syntax error: end of map not found");
  CHECK(ErrorOf("command: [x]\nenv: {A: 1\n") == "train.yaml:3:1: YAML syntax error: end of map flow not found");
  CHECK(ErrorOf("command: [x]\n\tenv: 1\n").starts_with("train.yaml:2:"));
}

TEST_CASE("job file: deep nesting is an error, not a stack overflow") {
  std::string e = ErrorOf("command: " + std::string(100000, '['));
  CHECK(e.starts_with("train.yaml:"));
  CHECK(e.ends_with(": YAML nested too deeply"));
}

TEST_CASE("job file: command and trainer, both or neither") {
  CHECK(ErrorOf("command: [x]\ntrainer: {a: 1}\n") ==
        "train.yaml:2:1: 'command' and 'trainer' are both set; use one of them");
  CHECK(ErrorOf("trainer: {a: 1}\ncommand: [x]\n") ==
        "train.yaml:2:1: 'command' and 'trainer' are both set; use one of them");
  CHECK(ErrorOf("procs_per_node: 1\n") ==
        "train.yaml:1:1: expected 'command:' (what each worker runs) or 'trainer:' (the built-in trainer)");
  CHECK(ErrorOf("") == "train.yaml: empty job file; expected 'command:' or 'trainer:'");
  CHECK(ErrorOf("# only a comment\n") == "train.yaml: empty job file; expected 'command:' or 'trainer:'");
  CHECK(ErrorOf("- a\n- b\n") ==
        "train.yaml:1:1: expected a mapping of job keys (command, trainer, procs_per_node, env, ...)");
  CHECK(ErrorOf("command: []\n").starts_with("train.yaml:1:10: 'command': expected a list of arguments"));
  CHECK(ErrorOf("command: [[a]]\n") == "train.yaml:1:11: 'command': expected each argument to be a string");
  CHECK(ErrorOf("trainer:\n") == "train.yaml:1:1: 'trainer': expected the trainer's settings");
}

TEST_CASE("job file: contradictions and bad values") {
  CHECK(ErrorOf("command: [x]\nelastic:\n  min_nodes: 3\n  max_nodes: 2\n") ==
        "train.yaml:3:3: 'elastic': min_nodes (3) is greater than max_nodes (2)");
  CHECK(ErrorOf("command: [x]\nelastic:\n  heartbeat_interval: 2s\n  heartbeat_timeout: 2s\n") ==
        "train.yaml:3:3: 'elastic': heartbeat_timeout (2s) must be greater than heartbeat_interval (2s)");
  CHECK(ErrorOf("command: [x]\nelastic:\n  heartbeat_interval: 0s\n") ==
        "train.yaml:3:3: 'elastic': heartbeat_interval must be greater than 0");
  // Every duration has a documented range (common/duration.h): out of it is an
  // error where it is read, not a wrapped 32-bit ms counter or a 0 ms heartbeat.
  CHECK(ErrorOf("command: [x]\nelastic:\n  hang_timeout: 4294968s\n") ==
        "train.yaml:3:17: 'hang_timeout': expected 0 (off) or a duration between 100ms and 168h, got '4294968s'");
  CHECK(ErrorOf("command: [x]\nelastic:\n  heartbeat_interval: 0.0001s\n") ==
        "train.yaml:3:23: 'heartbeat_interval': expected a duration between 10ms and 1h, got '0.0001s'");
  CHECK(ErrorOf("command: [x]\nelastic:\n  heartbeat_timeout: 25h\n") ==
        "train.yaml:3:22: 'heartbeat_timeout': expected a duration between 10ms and 24h, got '25h'");
  CHECK(ErrorOf("command: [x]\nelastic:\n  host_cooldown: 200h\n") ==
        "train.yaml:3:18: 'host_cooldown': expected a duration between 0s and 168h, got '200h'");
  CHECK(ErrorOf("command: [x]\nssh: {connect_timeout: 2h}\n") ==
        "train.yaml:2:24: 'connect_timeout': expected a duration between 10ms and 1h, got '2h'");
  // The timeout must exceed the interval, also when only the interval is written.
  CHECK(ErrorOf("command: [x]\nelastic:\n  heartbeat_interval: 10s\n") ==
        "train.yaml:3:3: 'elastic': heartbeat_timeout (5s) must be greater than heartbeat_interval (10s)");
  CHECK(Parse("command: [x]\nelastic: {hang_timeout: 0s, host_cooldown: 0s, heartbeat_interval: 10ms}\n")
            .elastic.hang_timeout == 0.0);
  CHECK(ErrorOf("command: [x]\nelastic: {hang_timeout: soon}\n") ==
        "train.yaml:2:25: 'hang_timeout': expected a duration such as 500ms, 3s or 2m, got 'soon'");
  CHECK(ErrorOf("command: [x]\nelastic: {rejoin: maybe}\n") == "train.yaml:2:19: 'rejoin': expected true or false");
  CHECK(ErrorOf("command: [x]\nprocs_per_node: 0\n") ==
        "train.yaml:2:17: 'procs_per_node': expected an integer between 1 and 1048576, got '0'");
  CHECK(ErrorOf("command: [x]\nprocs_per_node: 2abc\n") ==
        "train.yaml:2:17: 'procs_per_node': expected an integer between 1 and 1048576, got '2abc'");
  CHECK(ErrorOf("command: [x]\nnetwork: {master_port: 70000}\n") ==
        "train.yaml:2:24: 'master_port': expected an integer between 0 and 65535, got '70000'");
  CHECK(ErrorOf("command: [x]\nelastic: 3\n") == "train.yaml:2:10: expected a mapping for 'elastic'");
  CHECK(ErrorOf("command: [x]\nworking_dir: [a]\n") == "train.yaml:2:14: 'working_dir': expected a string");
}

TEST_CASE("job file: env errors") {
  CHECK(ErrorOf("command: [x]\nenv: [A]\n") == "train.yaml:2:6: 'env': expected a mapping of NAME: value");
  CHECK(ErrorOf("command: [x]\nenv:\n  1BAD: x\n") ==
        "train.yaml:3:3: 'env': '1BAD' is not a valid environment variable name");
  CHECK(ErrorOf("command: [x]\nenv:\n  A: 1\n  A: 2\n") == "train.yaml:4:3: duplicate key 'A'");
  CHECK(ErrorOf("command: [x]\nenv:\n  A: {b: 1}\n") == "train.yaml:3:6: 'env': expected a string value for A");
  CHECK(ErrorOf("command: [x]\nenv:\n  RANK: 3\n").starts_with(
        "train.yaml:3:3: 'env': RANK is set by dslaunch for every worker and cannot be overridden"));
  CHECK(Parse("command: [x]\nenv:\n  OMP_NUM_THREADS: 4\n  NCCL_SOCKET_IFNAME: ib0\n").env.size() == 2);
}

TEST_CASE("job file: duplicate top-level key") {
  CHECK(ErrorOf("command: [x]\ncommand: [y]\n") == "train.yaml:2:1: duplicate key 'command'");
}

TEST_CASE("job file: LoadJobFile errors name the file") {
  auto r = LoadJobFile("/nonexistent/train.yaml");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "job file /nonexistent/train.yaml: No such file or directory");
  auto ex = LoadJobFile(std::string(DSLAUNCH_SOURCE_DIR) + "/examples/train.yaml");
  INFO(ex.status().message());
  CHECK(ex.ok());
}

TEST_CASE("job file: ssh section") {
  JobSpec j = Parse("command: [x]\nssh:\n  strict_host_key_checking: yes\n  connect_timeout: 3s\n  port: 2222\n");
  CHECK(j.ssh.strict_host_key_checking == "yes");
  CHECK(j.ssh.connect_timeout == 3.0);
  REQUIRE(j.ssh.port.has_value());
  CHECK(*j.ssh.port == 2222);
  CHECK(Parse("command: [x]\nssh: {strict_host_key_checking: accept-new}\n").ssh.strict_host_key_checking ==
        "accept-new");
  CHECK(Parse("command: [x]\nssh: {strict_host_key_checking: 'no'}\n").ssh.strict_host_key_checking == "no");
  CHECK(Parse("command: [x]\nssh: {strict_host_key_checking: No}\n").ssh.strict_host_key_checking == "no");
  JobSpec d = Parse("command: [x]\n");  // unset: the command line and DSLAUNCH_* decide
  CHECK(d.ssh.strict_host_key_checking.empty());
  CHECK(d.ssh.connect_timeout == 0.0);
  CHECK_FALSE(d.ssh.port.has_value());
}

TEST_CASE("job file: ssh errors") {
  CHECK(ErrorOf("command: [x]\nssh:\n  strict_host_key_cheking: no\n") ==
        "train.yaml:3:3: unknown key 'strict_host_key_cheking' in ssh (did you mean "
        "'strict_host_key_checking'?)");
  CHECK(ErrorOf("command: [x]\nssh:\n  strict_host_key_checking: accept_new\n") ==
        "train.yaml:3:29: 'strict_host_key_checking': expected yes, accept-new or no, got 'accept_new' "
        "(did you mean 'accept-new'?)");
  CHECK(ErrorOf("command: [x]\nssh: {strict_host_key_checking: off}\n").starts_with(
        "train.yaml:2:33: 'strict_host_key_checking': expected yes, accept-new or no, got 'off'"));
  CHECK(ErrorOf("command: [x]\nssh: {port: 70000}\n") ==
        "train.yaml:2:13: 'port': expected an integer between 1 and 65535, got '70000'");
  CHECK(ErrorOf("command: [x]\nssh: {connect_timeout: soon}\n") ==
        "train.yaml:2:24: 'connect_timeout': expected a duration such as 500ms, 3s or 2m, got 'soon'");
  CHECK(ErrorOf("command: [x]\nssh: {connect_timeout: 0s}\n") ==
        "train.yaml:2:24: 'connect_timeout': must be greater than 0");
  CHECK(ErrorOf("command: [x]\nssh: [port]\n") == "train.yaml:2:6: expected a mapping for 'ssh'");
}

TEST_CASE("job file: elastic.min_nodes written or defaulted") {
  CHECK_FALSE(Parse("command: [x]\n").elastic.min_nodes_set);
  CHECK_FALSE(Parse("command: [x]\nelastic: {max_restarts: 1}\n").elastic.min_nodes_set);
  CHECK(Parse("command: [x]\nelastic: {min_nodes: 1}\n").elastic.min_nodes_set);
}

TEST_CASE("JobSpecFromCommand: .py runs under python3 -u") {
  CHECK(JobSpecFromCommand({"train.py", "--deepspeed", "ds.json"}).command ==
        std::vector<std::string>{"python3", "-u", "train.py", "--deepspeed", "ds.json"});
  CHECK(JobSpecFromCommand({"./run.sh", "a"}).command == std::vector<std::string>{"./run.sh", "a"});
  CHECK(JobSpecFromCommand({".py"}).command == std::vector<std::string>{".py"});
}

TEST_CASE("JobSpecFromCommand: the interpreter, -m and --no-python come from the caller") {
  using Argv = std::vector<std::string>;
  CHECK(JobSpecFromCommand({"train.py", "a"}, {.python = "/opt/py/bin/python3.11"}).command ==
        Argv{"/opt/py/bin/python3.11", "-u", "train.py", "a"});
  CHECK(JobSpecFromCommand({"pkg.mod", "a"}, {.module = true}).command == Argv{"python3", "-u", "-m", "pkg.mod", "a"});
  CHECK(JobSpecFromCommand({"pkg.mod"}, {.python = "py", .module = true}).command == Argv{"py", "-u", "-m", "pkg.mod"});
  CHECK(JobSpecFromCommand({"train.py", "a"}, {.no_python = true}).command == Argv{"train.py", "a"});
  CHECK_FALSE(JobSpecFromCommand({"train.py"}).local_rank_arg);  // the caller decides (JobFromCli)
}

TEST_CASE("IsUserSettableEnv") {
  CHECK_FALSE(IsUserSettableEnv("RANK"));
  CHECK_FALSE(IsUserSettableEnv("MASTER_PORT"));
  CHECK_FALSE(IsUserSettableEnv("DSLAUNCH_JOB_ID"));
  CHECK(IsUserSettableEnv("OMP_NUM_THREADS"));
  CHECK(IsUserSettableEnv("CUDA_VISIBLE_DEVICES"));
  CHECK(IsUserSettableEnv("NCCL_DEBUG"));
  CHECK(IsUserSettableEnv("DSLAUNCH_LOG"));
}

TEST_CASE("job file: limits of exec checked at parse time") {
  CHECK(ErrorOf("command: [x]\nenv: {A: \"x\\0y\"}\n") ==
        "train.yaml:2:10: 'env': the value of A contains a NUL byte at offset 1");
  CHECK(ErrorOf("command: [x]\nenv: {BIG: " + std::string(131070, 'x') + "}\n") ==
        "train.yaml:2:12: 'env': BIG=... is 131075 bytes, over the kernel's limit of 131072 for one environment "
        "string (MAX_ARG_STRLEN)");
  CHECK(ErrorOf("command: [x, \"a\\0b\"]\n") ==
        "train.yaml:1:14: 'command': the argument contains a NUL byte at offset 1");
  CHECK(ErrorOf("command: \"echo \\0\"\n") ==
        "train.yaml:1:10: 'command': the argument contains a NUL byte at offset 5");
  CHECK(ErrorOf("command: [" + std::string(131072, 'x') + "]\n") ==
        "train.yaml:1:11: 'command': the argument is 131073 bytes, over the kernel's limit of 131072 for one "
        "argument (MAX_ARG_STRLEN)");
  // The trainer: section travels to the workers in one environment variable.
  CHECK(ErrorOf("trainer:\n  data: {path: " + std::string(131072, 'p') + "}\n") ==
        "train.yaml:1:1: 'trainer': the section travels to the workers as DSLAUNCH_TRAINER_CONFIG=... is 131111 "
        "bytes, over the kernel's limit of 131072 for one environment string (MAX_ARG_STRLEN)");
}

}  // namespace
}  // namespace ds

namespace ds {
namespace {

TEST_CASE("job file: DeepSpeed/torchrun compatibility keys") {
  JobSpec d = Parse("command: [x]\n");
  CHECK_FALSE(d.local_rank_arg);
  CHECK_FALSE(d.bind_cores);
  CHECK(d.forward_env == DefaultForwardEnv());
  JobSpec j = Parse("command: [x]\nlocal_rank_arg: true\nbind_cores_to_rank: yes\nbind_core_list: 0-3,8\n"
                    "forward_env: [NCCL_, MY_APP_]\n");
  CHECK(j.local_rank_arg);
  CHECK(j.bind_cores);
  CHECK(j.core_list == "0-3,8");
  CHECK(j.forward_env == std::vector<std::string>{"NCCL_", "MY_APP_"});
  CHECK(Parse("command: [x]\nforward_env: []\n").forward_env.empty());
  CHECK(ErrorOf("command: [x]\nforward_env: NCCL\n") ==
        "train.yaml:2:14: 'forward_env': expected a list of variable-name prefixes such as [NCCL_, PYTHON]");
  CHECK(ErrorOf("command: [x]\nforward_env: [NCCL, 'A-B']\n") ==
        "train.yaml:2:21: 'forward_env': expected a variable-name prefix ([A-Za-z_][A-Za-z0-9_]*), got 'A-B'");
  CHECK(ErrorOf("command: [x]\nlocal_rank_arg: 2\n") == "train.yaml:2:17: 'local_rank_arg': expected true or false");
}

TEST_CASE("job file: pty gives the workers terminals") {
  CHECK_FALSE(Parse("command: [x]\n").pty);
  CHECK(Parse("command: [x]\npty: true\n").pty);
  CHECK(ErrorOf("command: [x]\npty: sometimes\n") == "train.yaml:2:6: 'pty': expected true or false");
}

TEST_CASE("job spec: elastic.slow_factor and slow_window (stragglers), their defaults and ranges", "[jobspec]") {
  const JobSpec d = Parse("command: [x]\n");
  CHECK(d.elastic.slow_factor == kDefaultSlowFactor);
  CHECK(d.elastic.slow_window == kDefaultSlowWindow);
  const JobSpec j = Parse("command: [x]\nelastic: {slow_factor: 2.5, slow_window: 30s}\n");
  CHECK(j.elastic.slow_factor == 2.5);
  CHECK(j.elastic.slow_window == 30.0);
  CHECK(Parse("command: [x]\nelastic: {slow_factor: 0}\n").elastic.slow_factor == 0.0);
  CHECK(ErrorOf("command: [x]\nelastic: {slow_factor: 1.05}\n") ==
        "train.yaml:2:24: 'slow_factor': expected 0 (off) or a number from 1.1 to 100, got '1.05'");
  CHECK(ErrorOf("command: [x]\nelastic: {slow_factor: 2x}\n") ==
        "train.yaml:2:24: 'slow_factor': expected 0 (off) or a number from 1.1 to 100, got '2x'");
  CHECK(ErrorOf("command: [x]\nelastic: {slow_window: 2h}\n") ==
        "train.yaml:2:24: 'slow_window': expected a duration between 100ms and 1h, got '2h'");
}

TEST_CASE("job spec: elastic.slow_link_factor and slow_link_floor, their defaults and ranges", "[jobspec]") {
  const JobSpec d = Parse("command: [x]\n");
  CHECK(d.elastic.slow_link_factor == kDefaultSlowLinkFactor);
  CHECK(d.elastic.slow_link_floor == kDefaultSlowLinkFloor);
  const JobSpec j = Parse("command: [x]\nelastic: {slow_link_factor: 8, slow_link_floor: 5ms}\n");
  CHECK(j.elastic.slow_link_factor == 8.0);
  CHECK(j.elastic.slow_link_floor == 0.005);
  CHECK(Parse("command: [x]\nelastic: {slow_link_factor: 0}\n").elastic.slow_link_factor == 0.0);
  CHECK(ErrorOf("command: [x]\nelastic: {slow_link_factor: 1}\n") ==
        "train.yaml:2:29: 'slow_link_factor': expected 0 (off) or a number from 1.1 to 100, got '1'");
  CHECK(ErrorOf("command: [x]\nelastic: {slow_link_floor: 2m}\n") ==
        "train.yaml:2:28: 'slow_link_floor': expected a duration between 1ms and 1m, got '2m'");
}

TEST_CASE("job spec: elastic.in_place and in_place_deadline, their defaults and range", "[jobspec]") {
  const JobSpec d = Parse("command: [x]\n");
  CHECK_FALSE(d.elastic.in_place);
  CHECK(d.elastic.in_place_deadline == 5.0);
  const JobSpec j = Parse("command: [x]\nelastic: {in_place: true, in_place_deadline: 800ms}\n");
  CHECK(j.elastic.in_place);
  CHECK(j.elastic.in_place_deadline == 0.8);
  CHECK(ErrorOf("command: [x]\nelastic: {in_place: maybe}\n") == "train.yaml:2:21: 'in_place': expected true or false");
  CHECK(ErrorOf("command: [x]\nelastic: {in_place_deadline: 2h}\n") ==
        "train.yaml:2:30: 'in_place_deadline': expected a duration between 10ms and 1h, got '2h'");
}

TEST_CASE("job spec: elastic.hang_factor, hang_floor, evict_slow and evict_cooldown, defaults and ranges", "[jobspec]") {
  const JobSpec d = Parse("command: [x]\n");
  CHECK(d.elastic.hang_factor == kDefaultHangFactor);
  CHECK(d.elastic.hang_floor == kDefaultHangFloor);
  CHECK_FALSE(d.elastic.evict_slow);
  CHECK(d.elastic.evict_cooldown == kDefaultEvictCooldown);
  const JobSpec j =
      Parse("command: [x]\nelastic: {hang_factor: 10, hang_floor: 5s, evict_slow: true, evict_cooldown: 2m}\n");
  CHECK(j.elastic.hang_factor == 10.0);
  CHECK(j.elastic.hang_floor == 5.0);
  CHECK(j.elastic.evict_slow);
  CHECK(j.elastic.evict_cooldown == 120.0);
  CHECK(ErrorOf("command: [x]\nelastic: {hang_factor: 1}\n") ==
        "train.yaml:2:24: 'hang_factor': expected 0 (off) or a number from 1.1 to 100, got '1'");
  CHECK(ErrorOf("command: [x]\nelastic: {hang_floor: 100ms}\n") ==
        "train.yaml:2:23: 'hang_floor': expected a duration between 500ms and 24h, got '100ms'");
  CHECK(ErrorOf("command: [x]\nelastic: {evict_slow: maybe}\n").find("'evict_slow'") != std::string::npos);
}

TEST_CASE("job file: python: preload lists the modules warm spares import; off by default") {
  CHECK(Parse("command: [python3, t.py]\n").python.preload.empty());
  CHECK(Parse("command: [python3, t.py]\npython: {preload: [torch, numpy, torch.distributed]}\n").python.preload ==
        std::vector<std::string>{"torch", "numpy", "torch.distributed"});
  CHECK(Parse("command: [python3, t.py]\npython: {}\n").python.preload.empty());
  CHECK(ErrorOf("command: [python3, t.py]\npython: {preload: torch}\n") ==
        "train.yaml:2:19: 'preload': expected a list of modules such as [torch, numpy]");
  CHECK(ErrorOf("command: [python3, t.py]\npython: {preload: [torch, 'my-mod']}\n") ==
        "train.yaml:2:27: 'preload': expected a module name such as torch or torch.distributed, got 'my-mod'");
  CHECK(ErrorOf("command: [python3, t.py]\npython: {preload: [torch..nn]}\n") ==
        "train.yaml:2:20: 'preload': expected a module name such as torch or torch.distributed, got 'torch..nn'");
  CHECK(ErrorOf("command: [python3, t.py]\npython: {prelaod: [torch]}\n").find("prelaod") != std::string::npos);
  CHECK(ErrorOf("trainer: {model: {layers: [784, 10]}}\npython: {preload: [torch]}\n") ==
        "train.yaml:2:9: 'python': preload applies to a Python command; this job runs the built-in trainer");
}

TEST_CASE("job file: errors echo the line and put a caret under the column, as the hostfile's do") {
  auto full = [](const std::string& text) {
    auto r = ParseJobFile(text, "train.yaml");
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(full("command: [x]\nprocs_per_nod: 1\n") ==
        "train.yaml:2:1: unknown key 'procs_per_nod' (did you mean 'procs_per_node'?)\n"
        "procs_per_nod: 1\n"
        "^");
  CHECK(full("command: [x]\nelastic:\n  hang_timeout: 4294968s\n") ==
        "train.yaml:3:17: 'hang_timeout': expected 0 (off) or a duration between 100ms and 168h, got '4294968s'\n"
        "  hang_timeout: 4294968s\n"
        "                ^");
  CHECK(full("trainer:\n  model: {layers: [784, 10], activaton: relu}\n") ==
        "train.yaml:2:30: unknown key 'activaton' in trainer.model (did you mean 'activation'?)\n"
        "  model: {layers: [784, 10], activaton: relu}\n"
        "                             ^");
  CHECK(full("command: [a, b]\r\n  bad: indent\r\n") ==
        "train.yaml:2:3: YAML syntax error: end of map not found\n"
        "  bad: indent\n"
        "  ^");
  // Nothing to echo: past the end, a line over 200 bytes, bytes that are not printable ASCII.
  CHECK(full("command: [x]\nenv: {A: 1\n") == "train.yaml:3:1: YAML syntax error: end of map flow not found");
  CHECK(full("command: [x]\nprocs_per_node: " + std::string(300, '9') + "\n").find('\n') == std::string::npos);
  CHECK(full("command: [x]\n# caf\xc3\xa9\nbanana: 1  # caf\xc3\xa9\n") == "train.yaml:3:1: unknown key 'banana'");
}

TEST_CASE("job file: every bad key is said at once, in the file's order, each with its line and caret") {
  auto full = [](const std::string& text) {
    auto r = ParseJobFile(text, "train.yaml");
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(full("command: [python3, train.py]\n"
             "procs_per_nod: 2\n"
             "elastic:\n"
             "  max_restarts: lots\n"
             "pty: maybe\n"
             "log_dir: [a, b]\n") ==
        "train.yaml:2:1: unknown key 'procs_per_nod' (did you mean 'procs_per_node'?)\n"
        "procs_per_nod: 2\n"
        "^\n"
        "train.yaml:4:17: 'max_restarts': expected an integer between 0 and 1048576, got 'lots'\n"
        "  max_restarts: lots\n"
        "                ^\n"
        "train.yaml:5:6: 'pty': expected true or false\n"
        "pty: maybe\n"
        "     ^\n"
        "train.yaml:6:10: 'log_dir': expected a string\n"
        "log_dir: [a, b]\n"
        "         ^\n"
        "train.yaml: 4 errors");
  // A wrong command is its own error, not also "expected 'command:'".
  CHECK(full("command: []\nprocs_per_node: 0\n") ==
        "train.yaml:1:10: 'command': expected a list of arguments such as [python3, train.py] or a shell string\n"
        "command: []\n"
        "         ^\n"
        "train.yaml:2:17: 'procs_per_node': expected an integer between 1 and 1048576, got '0'\n"
        "procs_per_node: 0\n"
        "                ^\n"
        "train.yaml: 2 errors");
  // Bounded: the first kMaxJobFileErrors, then a line saying more follow.
  std::string many = "command: [x]\n";
  for (int i = 0; i < 30; ++i) many += "bad" + std::to_string(i) + ": 1\n";
  const std::string m = full(many);
  CHECK(m.find("train.yaml:21:1: unknown key 'bad19'\nbad19: 1\n^\n") != std::string::npos);
  CHECK(m.find("bad20") == std::string::npos);
  CHECK(m.substr(m.rfind('\n') + 1) == "train.yaml: more errors after these 20; fix them and run again");
}

}  // namespace
}  // namespace ds
