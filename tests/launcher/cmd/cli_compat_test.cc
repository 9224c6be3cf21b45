// The DeepSpeed / torchrun flags (launcher/cmd/cli_compat.cc): what each
// puts into CliOptions, and the range errors word for word.
#include <cstdlib>

#include <catch2/catch.hpp>

#include "launcher/cmd/cli.h"
#include "launcher/config/coordinator_spec.h"
#include "tests/launcher/cmd/parse_cli.h"

namespace ds {
namespace {

using testing::Argv;
using testing::ErrorOf;
using testing::Parse;

TEST_CASE("cli compat: --nproc_per_node N, auto, gpu, cpu in every spelling") {
  for (const char* flag : {"--nproc_per_node", "--nproc-per-node", "--num_gpus", "--num-gpus", "--num_accelerators",
                           "--num-accelerators"}) {
    INFO(flag);
    CliOptions o = Parse({flag, "3", "x.yaml"});
    CHECK(o.selection.num_gpus == 3);
    CHECK(o.nproc_mode.empty());
    CHECK(o.selection.num_gpus_flag == flag);
  }
  CHECK(Parse({"--nproc-per-node=auto", "x.yaml"}).nproc_mode == "auto");
  CHECK(Parse({"--nproc_per_node", "GPU", "x.yaml"}).nproc_mode == "gpu");
  CliOptions cpu = Parse({"--nproc_per_node", "cpu", "x.yaml"});
  CHECK(cpu.nproc_mode == "cpu");
  CHECK(cpu.selection.num_gpus == -1);
  CHECK(Parse({"x.yaml"}).nproc_mode.empty());
}

TEST_CASE("cli compat: range errors name the option, the range in plain numbers and the value") {
  CHECK(ErrorOf({"--nnodes", "0", "x.yaml"}) ==
        "--nnodes: expected N or MIN:MAX with integers between 1 and 1048576, got '0'");
  CHECK(ErrorOf({"--num_nodes", "1:x", "x.yaml"}) ==
        "--num_nodes: expected N or MIN:MAX with integers between 1 and 1048576, got '1:x'");
  CHECK(ErrorOf({"--master_port", "99999", "x.yaml"}) ==
        "--master_port: expected an integer between 0 and 65535 (0: a free port per generation), got '99999'");
  CHECK(ErrorOf({"--master-port", "-1", "x.yaml"}) ==
        "--master-port: expected an integer between 0 and 65535 (0: a free port per generation), got '-1'");
  CHECK(ErrorOf({"--fanout", "-1", "x.yaml"}) == "--fanout: expected an integer between 1 and 1048576, got '-1'");
  CHECK(ErrorOf({"--fanout=0", "x.yaml"}) == "--fanout: expected an integer between 1 and 1048576, got '0'");
  CHECK(ErrorOf({"--ssh-port", "0", "x.yaml"}) == "--ssh-port: expected an integer between 1 and 65535, got '0'");
  CHECK(ErrorOf({"--max-restarts", "1e9", "x.yaml"}) ==
        "--max-restarts: expected an integer between 0 and 1048576, got '1e9'");
  CHECK(ErrorOf({"--nproc_per_node", "0", "x.yaml"}) ==
        "--nproc_per_node: expected an integer between 1 and 1048576, or auto, gpu or cpu, got '0'");
  CHECK(ErrorOf({"--nproc-per-node", "1e308", "x.yaml"}) ==
        "--nproc-per-node: expected an integer between 1 and 1048576, or auto, gpu or cpu, got '1e308'");
  // A 300-digit value is cut short, never repeated in full.
  std::string huge(300, '9');
  CHECK(ErrorOf({"--master_port", huge, "x.yaml"}) ==
        "--master_port: expected an integer between 0 and 65535 (0: a free port per generation), got "
        "'99999999999999999999...'");
  CHECK(ErrorOf({"--min_elastic_nodes", "0", "x.yaml"}) ==
        "--min_elastic_nodes: expected an integer between 1 and 1048576, got '0'");
}

TEST_CASE("cli compat: --nnodes N keeps --num_nodes; MIN:MAX and DeepSpeed's elastic flags set the bounds") {
  CliOptions n = Parse({"--nnodes", "2", "x.yaml"});
  CHECK(n.selection.num_nodes == 2);
  CHECK(n.elastic_min_nodes == -1);
  CliOptions mm = Parse({"--nnodes", "2:4", "x.yaml"});
  CHECK(mm.selection.num_nodes == -1);
  CHECK(mm.elastic_min_nodes == 2);
  CHECK(mm.elastic_max_nodes == 4);
  CHECK(Parse({"--nnodes=3:3", "x.yaml"}).elastic_max_nodes == 3);
  CHECK(ErrorOf({"--nnodes", "3:2", "x.yaml"}) == "--nnodes: MIN (3) is more than MAX (2) in '3:2'");
  CliOptions ds = Parse({"--min_elastic_nodes", "1", "--max-elastic-nodes", "3", "--elastic_training", "x.yaml"});
  CHECK(ds.elastic_min_nodes == 1);
  CHECK(ds.elastic_max_nodes == 3);
  CHECK(ds.elastic_training);
  CHECK(ErrorOf({"--min_elastic_nodes", "4", "--max_elastic_nodes", "3", "x.yaml"}) ==
        "--min_elastic_nodes (4) is more than --max_elastic_nodes (3)");
  CHECK(ErrorOf({"--nnodes", "1:2", "--min_elastic_nodes", "1", "x.yaml"}) ==
        "--nnodes MIN:MAX and --min_elastic_nodes/--max_elastic_nodes set the same bounds; give one of them");
}

TEST_CASE("cli compat: dashed and underscored spellings of master address and port") {
  CliOptions o = Parse({"--master-addr", "10.0.0.2", "--master-port", "29501", "x.yaml"});
  CHECK(o.master_addr == "10.0.0.2");
  CHECK(o.master_port == 29501);
  CHECK(Parse({"--master_addr=h", "x.yaml"}).master_addr == "h");
}

TEST_CASE("cli compat: -m runs a module, --no-python runs as is, PYTHON_EXEC picks the interpreter") {
  CliOptions m = Parse({"-m", "pkg.mod", "--lr", "1"});
  CHECK(m.module);
  CHECK(m.command == Argv{"pkg.mod", "--lr", "1"});
  CHECK(Parse({"--module", "train.yaml"}).command == Argv{"train.yaml"});  // a module, whatever its name
  CliOptions np = Parse({"--no_python", "train.py", "a"});
  CHECK(np.no_python);
  CHECK(np.command == Argv{"train.py", "a"});
  CHECK(Parse({"--no-python", "x.sh"}).no_python);
  CHECK(ErrorOf({"-m"}) == "-m/--module: expected a module name (dslaunch -m pkg.mod args...)");
  CHECK(ErrorOf({"-m", "--no-python", "x"}) ==
        "-m/--module and --no-python: give one of them (a module always runs under python)");
  CHECK(ErrorOf({"--no-python", "job.yaml"}) == "--no-python applies to a script or program, not to the job file job.yaml");
  CHECK(Parse({"x.py"}).python_exec == "python3");
  ::setenv("PYTHON_EXEC", "/opt/conda/bin/python", 1);
  CHECK(Parse({"x.py"}).python_exec == "/opt/conda/bin/python");
  ::setenv("PYTHON_EXEC", "", 1);
  CHECK(Parse({"x.py"}).python_exec == "python3");
  ::unsetenv("PYTHON_EXEC");
  CHECK(Parse({"--no_local_rank", "x.py"}).no_local_rank);
  CHECK(Parse({"--no-local-rank", "x.py"}).no_local_rank);
}

TEST_CASE("cli compat: --save_pid, --enable_each_rank_log, binding, --force_multi, --no_ssh_check") {
  CliOptions o = Parse({"--save_pid", "--enable_each_rank_log", "logs", "--bind_cores_to_rank", "--force_multi",
                        "--no_ssh_check", "x.yaml"});
  CHECK(o.save_pid);
  CHECK(o.log_dir == "logs");
  CHECK(o.bind_cores);
  CHECK(o.bind_core_list.empty());
  CHECK(o.force_multi);
  CHECK(o.notices.empty());  // --no_ssh_check is accepted silently
  CliOptions l = Parse({"--bind-core-list", "0-3,8-11", "x.yaml"});
  CHECK(l.bind_cores);  // implied
  CHECK(l.bind_core_list == "0-3,8-11");
  CHECK(Parse({"--bind_core_list", "not-checked-here", "x.yaml"}).bind_core_list == "not-checked-here");
  CHECK(Parse({"--log-dir", "logs", "--enable-each-rank-log", "logs", "x.yaml"}).log_dir == "logs");
  CHECK(ErrorOf({"--log-dir", "a", "--enable_each_rank_log", "b", "x.yaml"}) ==
        "--enable_each_rank_log b and --log-dir a: give one of them (both mean per-rank log files)");
  CHECK_FALSE(Parse({"x.yaml"}).save_pid);
}

TEST_CASE("cli compat: --launcher in any case; DeepSpeed's other launchers are clear errors") {
  CHECK(Parse({"--launcher", "PDSH", "x.yaml"}).launcher == "pdsh");
  CHECK(Parse({"--launcher", "Ssh", "x.yaml"}).launcher == "ssh");
  CHECK(Parse({"--launcher=LOCAL", "x.yaml"}).launcher == "local");
  CHECK(Parse({"--launcher", "SLURM", "x.yaml"}).launcher == "slurm");
  CHECK(Parse({"--launcher", "OpenMPI", "x.yaml"}).launcher == "openmpi");
  CHECK(Parse({"--launcher", "MPICH", "x.yaml"}).launcher == "mpich");
  CHECK(ErrorOf({"--launcher", "mvapich", "x.yaml"}) ==
        "--launcher mvapich: not supported (mpirun_rsh is not supported yet); use --launcher ssh (the default for "
        "remote hosts), pdsh, slurm, openmpi or mpich");
  for (const char* l : {"mvapich", "impi", "jsrun"})
    CHECK(ErrorOf({"--launcher", l, "x.yaml"}).starts_with("--launcher " + std::string(l) + ": not supported ("));
  CHECK(ErrorOf({"--launcher", "sssh", "x.yaml"}) ==
        "--launcher: expected auto, local, ssh, pdsh, slurm, openmpi or mpich, got 'sssh' (did you mean 'ssh'?)");
}

TEST_CASE("cli compat: --launcher_args is split like a shell, for pdsh, slurm and the MPI launchers only") {
  CliOptions o = Parse({"--launcher", "pdsh", "--launcher_args", "-l me -R 'exec x' \"a b\" c\\ d", "x.yaml"});
  CHECK(o.launcher_args == Argv{"-l", "me", "-R", "exec x", "a b", "c d"});
  CHECK(Parse({"--launcher-args", "-u 30", "x.yaml"}).launcher_args == Argv{"-u", "30"});  // auto: checked at launch
  CHECK(ErrorOf({"--launcher", "ssh", "--launcher_args", "-p 22", "x.yaml"}) ==
        "--launcher_args: applies to --launcher pdsh, slurm, openmpi and mpich only; for --launcher ssh set the job "
        "file's ssh: section (port, connect_timeout, strict_host_key_checking) or an ssh config file "
        "(DSLAUNCH_SSH_CONFIG)");
  CHECK(ErrorOf({"--launcher", "pdsh", "--launcher_args", "-R 'x", "x.yaml"}) ==
        "--launcher_args: unterminated ' quote in '-R 'x'");
}

// The notice names each flag as typed (--rdzv_id), not by its first name.
TEST_CASE("cli compat: torchrun's flags that do not apply are accepted with one notice line") {
  CliOptions o = Parse({"--monitor-interval", "5", "--rdzv-backend", "c10d", "--rdzv_id",
                        "7", "--rdzv-conf", "a=b", "--rdzv-endpoint", "h:29400", "--standalone", "--role", "trainer",
                        "--start_method", "spawn", "x.yaml"});
  REQUIRE(o.notices.size() == 1);
  CHECK(o.notices[0] ==
        "ignoring --monitor-interval 5 (dslaunch is told when a worker exits, it does not poll); "
        "--rdzv-backend c10d, --rdzv_id 7, --rdzv-conf a=b (dslaunch runs its own rendezvous: the coordinator and "
        "its store); --role trainer (every worker of a dslaunch job has the same role); --start_method spawn "
        "(workers are always separate processes started by the node's agent); --standalone (without a hostfile the "
        "job already runs on this machine with its own rendezvous); --rdzv-endpoint h:29400 (dslaunch runs its own "
        "rendezvous: the coordinator and its store; it names node 0 in the per-node form only (--node_rank, or "
        "--nnodes above 1))");
  CHECK(Parse({"--monitor_interval", "1", "x.yaml"}).notices ==
        Argv{"ignoring --monitor_interval 1 (dslaunch is told when a worker exits, it does not poll)"});
  CHECK(Parse({"x.yaml"}).notices.empty());
}

// Run on two machines it made two one-node jobs that both exited 0 (issue 33):
// now every node runs the same command and gets its rank as it joins.
TEST_CASE("cli compat: torchrun's multi-node recipe without --node_rank gives ranks at join") {
  CliOptions c = Parse({"--nnodes", "2", "--nproc_per_node", "8", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                        "node0:29400", "--rdzv-id", "exp7", "--rdzv-conf", "join_timeout=60,last_call_timeout=5",
                        "train.py"});
  CHECK(c.rdzv_join);
  CHECK(c.rdzv_endpoint == "node0:29400");
  CHECK(c.rdzv_id == "exp7");
  CHECK(c.rdzv_conf.join_timeout == 60.0);
  CHECK(c.rdzv_conf.last_call_timeout == 5.0);
  CHECK(c.notices.empty());  // --rdzv-backend, --rdzv-id and --rdzv-conf mean what they mean to torchrun
  CliOptions e = Parse({"--nnodes", "1:4", "--rdzv_endpoint", "h:1", "train.py"});
  CHECK(e.rdzv_join);
  CHECK(e.elastic_min_nodes == 1);
  CHECK(e.elastic_max_nodes == 4);
  // torchrun's c10d with --master_addr/--master_port instead of an endpoint.
  CHECK(Parse({"--nnodes", "2", "--rdzv_backend", "c10d", "--master_addr", "h", "train.py"}).rdzv_join);
  CHECK_FALSE(Parse({"--nnodes", "2", "--master_addr", "h", "train.py"}).rdzv_join);  // static: no join
  CHECK_FALSE(Parse({"--nnodes", "1", "--rdzv-endpoint", "h:29400", "x.yaml"}).rdzv_join);  // one node: one job
  CHECK(Parse({"--nnodes", "1", "--rdzv-endpoint", "h:29400", "x.yaml"}).notices.size() == 1);
  CliOptions ranked = Parse({"--nnodes", "2", "--node_rank", "1", "--rdzv-endpoint", "h:29400", "x.yaml"});
  CHECK(ranked.rdzv_endpoint == "h:29400");
  CHECK_FALSE(ranked.rdzv_join);
  // Bad forms, named as typed.
  CHECK(ErrorOf({"--nnodes", "4:1", "--rdzv-endpoint", "h:1", "train.py"}) ==
        "--nnodes: MIN (4) is more than MAX (1) in '4:1'");
  CHECK(ErrorOf({"--nnodes", "1:x", "--rdzv-endpoint", "h:1", "train.py"}) ==
        "--nnodes: expected N or MIN:MAX with integers between 1 and 1048576, got '1:x'");
  CHECK(ErrorOf({"--nnodes", "2", "--rdzv-endpoint", "h:1", "--rdzv_conf", "last_call=5", "train.py"}) ==
        "--rdzv_conf: unknown key 'last_call' (dslaunch reads join_timeout, last_call_timeout and is_host)");
}

// torchrun reads one etcd endpoint, HOST[:PORT] with 2379 by default
// (torch.distributed.elastic.rendezvous.utils.parse_rendezvous_endpoint).
TEST_CASE("cli compat: --rdzv-backend etcd and etcd-v2 with --rdzv-endpoint name the coordinator's etcd") {
  CliOptions c = Parse({"--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", "etcd0:2379", "--rdzv-id", "7",
                        "train.py"});
  CHECK(c.coordinator_etcd == Argv{"etcd0:2379"});
  CHECK(c.coordinator_etcd_flags == "--rdzv-backend etcd --rdzv-endpoint etcd0:2379");
  CHECK_FALSE(c.rdzv_join);           // the endpoint is the etcd, not node 0 ...
  CHECK(c.rdzv_endpoint.empty());     // ... in either per-node form
  CHECK(c.notices == Argv{std::string("--rdzv-backend etcd --rdzv-endpoint etcd0:2379: the coordinator's etcd is "
                                      "etcd0:2379; ") + kEtcdNotYet,
                          "ignoring --rdzv-id 7 (dslaunch runs its own rendezvous: the coordinator and its store)"});
  CliOptions v2 = Parse({"--rdzv_backend", "etcd-v2", "--rdzv_endpoint", "10.0.0.5", "x.yaml"});
  CHECK(v2.coordinator_etcd == Argv{"10.0.0.5:2379"});  // torchrun's default port
  CHECK(v2.coordinator_etcd_flags == "--rdzv_backend etcd-v2 --rdzv_endpoint 10.0.0.5");
  CHECK(Parse({"--rdzv-backend", "etcd", "--rdzv-endpoint", "[fd00::1]", "x.yaml"}).coordinator_etcd ==
        Argv{"[fd00::1]:2379"});
  CHECK(Parse({"--rdzv-backend", "etcd", "--rdzv-endpoint", "[fd00::1]:2380", "x.yaml"}).coordinator_etcd ==
        Argv{"[fd00::1]:2380"});
  CliOptions ranked = Parse({"--nnodes", "2", "--node_rank", "1", "--master_addr", "n0", "--rdzv-backend", "etcd",
                             "--rdzv-endpoint", "e:2379", "x.yaml"});
  CHECK(ranked.rdzv_endpoint.empty());  // node 0 is --master_addr's
  CHECK(ranked.coordinator_etcd == Argv{"e:2379"});
  // The other backends as before: c10d joins, static and the rest are ignored.
  CHECK(Parse({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n0:29400", "train.py"}).rdzv_join);
  CHECK(Parse({"--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n0:29400", "train.py"})
            .coordinator_etcd.empty());
  CHECK(Parse({"--rdzv-backend", "static", "x.yaml"}).notices ==
        Argv{"ignoring --rdzv-backend static (dslaunch runs its own rendezvous: the coordinator and its store)"});
  CHECK(Parse({"--rdzv-backend", "ETCD", "x.yaml"}).coordinator_etcd.empty());  // torchrun's names are lower case
  // Errors, each flag as typed.
  CHECK(ErrorOf({"--rdzv-backend", "etcd", "x.yaml"}) ==
        "--rdzv-backend etcd: expected --rdzv-endpoint HOST:PORT, the etcd that the coordinator's failover uses (or "
        "the job file's coordinator: section)");
  CHECK(ErrorOf({"--rdzv_backend", "etcd-v2", "--rdzv-endpoint", "a:2379,b:2379", "x.yaml"}) ==
        "--rdzv-endpoint a:2379,b:2379: torchrun's etcd rendezvous takes one endpoint; list several in the job "
        "file's coordinator: etcd: [HOST:PORT, ...]");
  CHECK(ErrorOf({"--rdzv-backend", "etcd", "--rdzv_endpoint", "e:0", "x.yaml"}) ==
        "--rdzv_endpoint (with --rdzv-backend etcd): expected HOST[:PORT], the etcd's address (port 2379 when none, "
        "an IPv6 address in brackets) with a port from 1 to 65535, got 'e:0'");
  CHECK(ErrorOf({"--rdzv-backend", "etcd", "--rdzv-endpoint", "fd00::1", "x.yaml"}).ends_with(", got 'fd00::1'"));
  CHECK(ErrorOf({"--rdzv-backend", "etcd", "--rdzv-endpoint", "e:99999", "x.yaml"}).ends_with(", got 'e:99999'"));
}

TEST_CASE("cli compat: --local-ranks-filter") {
  CHECK(Parse({"--local-ranks-filter", "2,0,2", "x.yaml"}).local_ranks_filter == std::vector<int>{0, 2});
  CHECK(Parse({"--local_ranks_filter=1", "x.yaml"}).local_ranks_filter == std::vector<int>{1});
  CHECK(Parse({"x.yaml"}).local_ranks_filter.empty());
  CHECK(ErrorOf({"--local_ranks_filter", "0,x", "x.yaml"}) ==
        "--local_ranks_filter: expected local ranks separated by commas such as 0,2, each between 0 and 1048575, "
        "got '0,x'");
  CHECK(ErrorOf({"--local-ranks-filter", "-1", "x.yaml"}).starts_with("--local-ranks-filter: expected local ranks"));
}

TEST_CASE("cli compat: DSLAUNCH_DEFAULT_HOSTFILE is read once, into the options") {
  CHECK(Parse({"x.yaml"}).default_hostfile == "/job/hostfile");
  ::setenv("DSLAUNCH_DEFAULT_HOSTFILE", "/tmp/some/hostfile", 1);
  CHECK(Parse({"x.yaml"}).default_hostfile == "/tmp/some/hostfile");
  ::unsetenv("DSLAUNCH_DEFAULT_HOSTFILE");
}

TEST_CASE("cli compat: --help says which form is which") {
  std::string h = CliHelpText();
  for (const char* s : {"DeepSpeed's form", "torchrun's form", "--local_rank=N", "PYTHON_EXEC", "--nproc-per-node",
                        "--num_accelerators", "--master-addr", "--save_pid", "--local-ranks-filter",
                        "with a hostfile all three mean each host's slots=", "DSLAUNCH_DEFAULT_HOSTFILE", "--tee"})
    CHECK(h.find(s) != std::string::npos);
}

// torchrun's -r/--redirects and -t/--tee are implemented (they were ignored).
TEST_CASE("cli compat: -r/--redirects and -t/--tee choose the streams, per local rank too") {
  CliOptions o = Parse({"-r", "2", "x.yaml"});
  CHECK(o.redirects.For(0) == 2);
  CHECK(o.streams_flag == "-r");
  CHECK_FALSE(o.tee);
  CHECK(o.notices.empty());
  o = Parse({"--redirects", "0:1,1:3", "--tee", "3", "x.yaml"});
  CHECK(o.redirects.For(0) == 1);
  CHECK(o.redirects.For(1) == 3);
  CHECK(o.redirects.For(2) == 0);
  CHECK(o.tee);
  CHECK(Parse({"-t", "0", "x.yaml"}).tee == false);
  CHECK(ErrorOf({"-r", "4", "x.yaml"}) ==
        "-r 4: expected 0-3 (1 stdout, 2 stderr, 3 both) for every local rank, or LOCAL_RANK:N pairs such as 0:1,1:2");
  CHECK(ErrorOf({"--tee", "0:1,x", "x.yaml"}) ==
        "--tee 0:1,x: expected 0-3 (1 stdout, 2 stderr, 3 both) for every local rank, or LOCAL_RANK:N pairs such "
        "as 0:1,1:2");
}

}  // namespace
}  // namespace ds

