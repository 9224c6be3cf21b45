#include "launcher/cmd/cli_compat.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "common/duration.h"
#include "common/strings.h"
#include "launcher/cmd/shell_split.h"
#include "launcher/config/coordinator_spec.h"
#include "launcher/config/hostfile.h"

namespace ds::cli {
namespace {

// A value as shown in a message: escaped, and cut short when long (a
// 300-digit number is not worth repeating).
std::string Shown(const std::string& v) {
  std::string p = Printable(v);
  if (p.size() > 24) p = p.substr(0, 20) + "...";
  return p;
}

// An integer option within [lo, hi]; `note` explains a special value.
Result<int> IntOption(const std::string& flag, const std::string& text, int lo, int hi, const std::string& note = "") {
  auto v = ParseInt(text);
  if (!v || *v < lo || *v > hi)
    return Status::InvalidArgument(fmt::format("{}: expected an integer between {} and {}{}, got '{}'", flag, lo, hi,
                                               note, Shown(text)));
  return static_cast<int>(*v);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// DeepSpeed's other launchers: what each would use, and why we do not.
const std::map<std::string, std::string> kUnsupportedLaunchers = {
    {"mvapich", "mpirun_rsh is not supported yet"},
    {"impi", "Intel MPI's mpirun is not supported yet"},
    {"jsrun", "jsrun is not supported yet"},
};

}  // namespace

const std::vector<std::string>& LauncherNames() {
  static const std::vector<std::string> names = {"auto", "local", "ssh", "pdsh", "slurm", "openmpi", "mpich"};
  return names;
}

namespace {

Status ApplyLauncher(const std::string& text, const std::vector<std::string>& launcher_args,
                     const std::vector<TypedOption>& given, CliOptions& o) {
  const std::string flag = Spelled(given, {"--launcher"});
  const std::string l = Lower(text);
  if (std::find(LauncherNames().begin(), LauncherNames().end(), l) != LauncherNames().end()) {
    o.launcher = l;
  } else if (auto it = kUnsupportedLaunchers.find(l); it != kUnsupportedLaunchers.end()) {
    return Status::InvalidArgument(fmt::format(
        "{} {}: not supported ({}); use --launcher ssh (the default for remote hosts), pdsh, slurm, "
        "openmpi or mpich",
        flag, Shown(text), it->second));
  } else {
    return Status::InvalidArgument(flag + ": expected auto, local, ssh, pdsh, slurm, openmpi or mpich, got '" +
                                   Shown(text) + "'" + DidYouMeanHint(l, LauncherNames()));
  }
  if (!launcher_args.empty() && (o.launcher == "ssh" || o.launcher == "local"))
    return Status::InvalidArgument(fmt::format(
        "{}: applies to --launcher pdsh, slurm, openmpi and mpich only; for --launcher {} set the job "
        "file's ssh: section (port, connect_timeout, strict_host_key_checking) or an ssh config file "
        "(DSLAUNCH_SSH_CONFIG)",
        Spelled(given, {"--launcher_args", "--launcher-args"}), o.launcher));
  o.launcher_args = launcher_args;
  return Status::OK();
}

// --nproc_per_node N | auto | gpu | cpu (also --num_gpus, --num_accelerators).
Status ApplyNprocPerNode(const std::string& text, const std::vector<TypedOption>& given, CliOptions& o) {
  const std::string flag = Spelled(given, {"--nproc_per_node", "--nproc-per-node", "--num_gpus", "--num-gpus",
                                          "--num_accelerators", "--num-accelerators"});
  o.selection.num_gpus_flag = flag;
  const std::string l = Lower(text);
  if (l == "auto" || l == "gpu" || l == "cpu") {
    o.nproc_mode = l;
    return Status::OK();
  }
  auto n = ParseInt(text);
  if (!n || *n < 1 || *n > kMaxSlotsPerHost)
    return Status::InvalidArgument(fmt::format("{}: expected an integer between 1 and {}, or auto, gpu or cpu, got '{}'",
                                               flag, kMaxSlotsPerHost, Shown(text)));
  o.selection.num_gpus = static_cast<int>(*n);
  return Status::OK();
}

// --nnodes N (the first N hosts, DeepSpeed's --num_nodes) or MIN:MAX
// (torchrun's elastic bounds).
Status ApplyNumNodes(const std::string& text, const std::vector<TypedOption>& given, CliOptions& o) {
  const std::string flag = Spelled(given, {"--num_nodes", "--num-nodes", "--nnodes"});
  o.selection.num_nodes_flag = flag;
  const size_t colon = text.find(':');
  const std::string range = fmt::format("N or MIN:MAX with integers between 1 and {}", kMaxWorldSize);
  auto bound = [&](const std::string& part) -> Result<int> {
    auto v = ParseInt(part);
    if (!v || *v < 1 || *v > kMaxWorldSize)
      return Status::InvalidArgument(fmt::format("{}: expected {}, got '{}'", flag, range, Shown(text)));
    return static_cast<int>(*v);
  };
  if (colon == std::string::npos) {
    DS_ASSIGN_OR_RETURN(o.selection.num_nodes, bound(text));
    return Status::OK();
  }
  DS_ASSIGN_OR_RETURN(int lo, bound(text.substr(0, colon)));
  DS_ASSIGN_OR_RETURN(int hi, bound(text.substr(colon + 1)));
  if (lo > hi) return Status::InvalidArgument(fmt::format("{}: MIN ({}) is more than MAX ({}) in '{}'", flag, lo, hi, text));
  o.elastic_min_nodes = lo;
  o.elastic_max_nodes = hi;
  return Status::OK();
}

// DeepSpeed's --min_elastic_nodes / --max_elastic_nodes.
Status ApplyElasticBounds(const RawOptions& raw, const std::vector<TypedOption>& given, CliOptions& o) {
  if (raw.min_elastic_nodes.empty() && raw.max_elastic_nodes.empty()) return Status::OK();
  if (o.elastic_min_nodes > 0)
    return Status::InvalidArgument("--nnodes MIN:MAX and --min_elastic_nodes/--max_elastic_nodes set the same "
                                   "bounds; give one of them");
  const std::string min_flag = Spelled(given, {"--min_elastic_nodes", "--min-elastic-nodes"});
  const std::string max_flag = Spelled(given, {"--max_elastic_nodes", "--max-elastic-nodes"});
  if (!raw.min_elastic_nodes.empty()) {
    DS_ASSIGN_OR_RETURN(o.elastic_min_nodes, IntOption(min_flag, raw.min_elastic_nodes, 1, kMaxWorldSize));
  }
  if (!raw.max_elastic_nodes.empty()) {
    DS_ASSIGN_OR_RETURN(o.elastic_max_nodes, IntOption(max_flag, raw.max_elastic_nodes, 1, kMaxWorldSize));
  }
  if (o.elastic_min_nodes > 0 && o.elastic_max_nodes > 0 && o.elastic_min_nodes > o.elastic_max_nodes)
    return Status::InvalidArgument(fmt::format("{} ({}) is more than {} ({})", min_flag, o.elastic_min_nodes,
                                               max_flag, o.elastic_max_nodes));
  return Status::OK();
}

// -r/--redirects and -t/--tee (torchrun's): which streams leave the
// terminal, and per-rank files.
Status ApplyStreams(const RawOptions& raw, const std::vector<TypedOption>& given, CliOptions& o) {
  if (!raw.redirects.empty()) {
    o.streams_flag = Spelled(given, {"-r", "--redirects"});
    DS_ASSIGN_OR_RETURN(o.redirects, ParseStreamSpec(o.streams_flag, raw.redirects));
  }
  if (!raw.tee.empty()) {
    const std::string flag = Spelled(given, {"-t", "--tee"});
    DS_ASSIGN_OR_RETURN(StreamSpec tee, ParseStreamSpec(flag, raw.tee));
    o.tee = tee.any();
    if (o.tee && o.streams_flag.empty()) o.streams_flag = flag;
  }
  return Status::OK();
}

// --local-ranks-filter 0,2
Status ApplyLocalRanksFilter(const std::string& text, const std::vector<TypedOption>& given, CliOptions& o) {
  const std::string flag = Spelled(given, {"--local-ranks-filter", "--local_ranks_filter"});
  std::vector<int> ranks;
  for (const std::string& part : Split(text, ',')) {
    auto v = ParseInt(Trim(part));
    if (!v || *v < 0 || *v >= kMaxSlotsPerHost)
      return Status::InvalidArgument(fmt::format(
          "{}: expected local ranks separated by commas such as 0,2, each between 0 and {}, got '{}'", flag,
          kMaxSlotsPerHost - 1, Shown(text)));
    ranks.push_back(static_cast<int>(*v));
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  o.local_ranks_filter = std::move(ranks);
  return Status::OK();
}

// --enable_each_rank_log DIR is --log-dir DIR.
Status ApplyEachRankLog(const std::string& dir, const std::vector<TypedOption>& given, CliOptions& o) {
  if (dir.empty()) return Status::OK();
  if (!o.log_dir.empty() && o.log_dir != dir)
    return Status::InvalidArgument(fmt::format(
        "{} {} and {} {}: give one of them (both mean per-rank log files)",
        Spelled(given, {"--enable_each_rank_log", "--enable-each-rank-log"}), dir,
        Spelled(given, {"--log-dir", "--log_dir"}), o.log_dir));
  o.log_dir = dir;
  return Status::OK();
}

// Declares one torchrun flag that takes a value and is accepted and ignored.
CLI::Option* Ignored(CLI::App& app, const std::string& names, const std::string& why, RawOptions& raw,
                     const char* group) {
  return app.add_option_function<std::string>(
         names, [&raw, names, why](const std::string& v) { raw.ignored.push_back({names, v, why}); },
         "accepted, ignored: " + why)
      ->type_name("X")
      ->group(group);
}

constexpr const char* kGroup = "DeepSpeed / torchrun compatibility";

// The option tables below stay one declaration per option, grouped by the
// tool they come from (DeepSpeed's launcher, torchrun's, the per-node form,
// the accepted-and-ignored ones), so each reads as a table.

// How the command is run (DeepSpeed's and torchrun's names).
void DeclareCommandForm(CLI::App& app, CliOptions& o) {
  app.add_flag("-m,--module", o.module,
               "torchrun's form: the first argument is a module, run as python3 -u -m MODULE (PYTHON_EXEC picks "
               "the interpreter); no --local_rank")
      ->group(kGroup);
  app.add_flag("--no-python,--no_python", o.no_python, "run the script or program directly, even a .py")
      ->group(kGroup);
  app.add_flag("--no_local_rank,--no-local-rank", o.no_local_rank,
               "never append --local_rank=N to the script's arguments")
      ->group(kGroup);
}

// DeepSpeed's launcher: elastic bounds, pid file, per-rank logs, binding, its launchers' arguments.
void DeclareDeepSpeedOptions(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.add_option("--min_elastic_nodes,--min-elastic-nodes", raw.min_elastic_nodes,
                 "elastic.min_nodes: fewer nodes left ends the job (like --nnodes MIN:MAX)")
      ->type_name("N")->group(kGroup);
  app.add_option("--max_elastic_nodes,--max-elastic-nodes", raw.max_elastic_nodes,
                 "elastic.max_nodes: hosts beyond it wait as standbys")
      ->type_name("N")->group(kGroup);
  app.add_flag("--elastic_training,--elastic-training", o.elastic_training,
               "restart on failure up to 100 times (DeepSpeed's elastic agent) unless --max_restarts or the job "
               "file's elastic.max_restarts says otherwise")
      ->group(kGroup);
  app.add_flag("--save_pid,--save-pid", o.save_pid,
               "write dslaunch's pid to /tmp/<pid>.deepspeed while the job runs (never overwrites a file)")
      ->group(kGroup);
  app.add_option("--enable_each_rank_log,--enable-each-rank-log", raw.each_rank_log,
                 "per-rank log files, like --log-dir (rank<N>.stdout.log and rank<N>.stderr.log; the terminal "
                 "still shows every line)")
      ->type_name("DIR")->group(kGroup);
  app.add_flag("--bind_cores_to_rank,--bind-cores-to-rank", o.bind_cores,
               "pin each local rank to its share of the node's cores")
      ->group(kGroup);
  app.add_option("--bind_core_list,--bind-core-list", o.bind_core_list,
                 "the cores to share out, e.g. 0-3,8-11 (implies --bind_cores_to_rank)")
      ->type_name("LIST")->group(kGroup);
  app.add_option("--launcher_args,--launcher-args", raw.launcher_args,
                 "extra pdsh arguments in one quoted word (split like a shell would, never run by one); "
                 "--launcher pdsh only")
      ->type_name("\"ARGS\"")->group(kGroup);
  app.add_flag("--force_multi,--force-multi", o.force_multi,
               "start agents over ssh even when every host is this machine (--launcher auto)")
      ->group(kGroup);
  app.add_flag("--no_ssh_check,--no-ssh-check")
      ->description("accepted, ignored: hosts are checked while connecting")
      ->group(kGroup);
  app.add_option("--local-ranks-filter,--local_ranks_filter", raw.local_ranks_filter,
                 "only these local ranks' lines reach the terminal (log files keep every line)")
      ->type_name("0,2")->group(kGroup);
  app.add_option("-r,--redirects", raw.redirects,
                 "these streams (1 stdout, 2 stderr, 3 both; or LOCAL_RANK:N,...) go to the per-rank files only, "
                 "not the terminal; the files are in --log-dir, else a fresh directory that dslaunch names")
      ->type_name("N|L:N,...")->group(kGroup);
  app.add_option("-t,--tee", raw.tee,
                 "per-rank files as well as the terminal (every stream of every rank: --log-dir, else a fresh "
                 "directory that dslaunch names)")
      ->type_name("N|L:N,...")->group(kGroup);
}

// The per-node form: every node runs the same command (torchrun's way, DeepSpeed's --no_ssh).
void DeclarePerNodeOptions(CLI::App& app, CliOptions& o, RawOptions& raw) {
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", raw.rdzv_endpoint,
                 "the per-node form: the rendezvous, HOST:PORT; with --node_rank node 0's dslaunch, without it "
                 "(--nnodes N or MIN:MAX) the node that can bind it hosts the job, the others join it and get "
                 "their rank (docs/per-node.md); with --rdzv-backend etcd the coordinator's etcd; otherwise ignored")
      ->type_name("HOST:PORT")->group(kGroup);
  app.add_option("--node_rank,--node-rank", raw.node_rank,
                 "the per-node form: this node's rank; every node runs the same command, node 0 runs the "
                 "job (docs/per-node.md)")
      ->type_name("R")->group(kGroup);
  app.add_flag("--no_ssh,--no-ssh", o.no_ssh, "the per-node form (DeepSpeed's name): needs --node_rank")
      ->group(kGroup);
  app.add_flag("--insecure", o.insecure,
               "the per-node form without DSLAUNCH_SECRET_FILE on a non-loopback address: anyone who can "
               "reach node 0 can join")
      ->group(kGroup);
}

// torchrun's flags that do not apply: accepted, one notice line.
void DeclareIgnoredOptions(CLI::App& app, RawOptions& raw) {
  const std::string rdzv = "dslaunch runs its own rendezvous: the coordinator and its store";
  Ignored(app, "--monitor-interval,--monitor_interval", "dslaunch is told when a worker exits, it does not poll",
          raw, kGroup);
  Ignored(app, "--rdzv-backend,--rdzv_backend", rdzv, raw, kGroup)
      ->description("accepted, ignored: " + rdzv + " (c10d: see --rdzv-endpoint); etcd or etcd-v2 with "
                    "--rdzv-endpoint: the coordinator's etcd (coordinator.etcd: the job's state is kept there)");
  Ignored(app, "--rdzv-id,--rdzv_id", rdzv, raw, kGroup);
  Ignored(app, "--rdzv-conf,--rdzv_conf", rdzv, raw, kGroup);
  Ignored(app, "--role", "every worker of a dslaunch job has the same role", raw, kGroup);
  Ignored(app, "--start-method,--start_method", "workers are always separate processes started by the node's agent",
          raw, kGroup);
  app.add_flag_function(
         "--standalone",
         [&raw](int64_t) {
           raw.ignored.push_back({"--standalone", "",
                                  "without a hostfile the job already runs on this machine with its own rendezvous"});
         },
         "accepted, ignored: without a hostfile the job runs on this machine anyway")
      ->group(kGroup);
}

// One line: "ignoring --redirects 1, --tee 3 (why); --role x (why)", each flag as typed.
std::string IgnoredNotice(const std::vector<RawOptions::Ignored>& ignored, const std::vector<TypedOption>& given) {
  std::string line = "ignoring ";
  for (size_t i = 0; i < ignored.size(); ++i) {
    const RawOptions::Ignored& ig = ignored[i];
    line += Spelled(given, Split(ig.names, ',')) + (ig.value.empty() ? "" : " " + ig.value);
    const bool last_with_why = i + 1 == ignored.size() || ignored[i + 1].why != ig.why;
    line += last_with_why ? " (" + ig.why + ")" + (i + 1 < ignored.size() ? "; " : "") : ", ";
  }
  return line;
}

// The value of ignored flag `names` when it was given (the last one), and
// takes it out of `ignored`.
std::optional<std::string> TakeIgnored(std::vector<RawOptions::Ignored>& ignored, const std::string& names) {
  std::optional<std::string> value;
  for (auto it = ignored.begin(); it != ignored.end();) {
    if (it->names != names) {
      ++it;
      continue;
    }
    value = it->value;
    it = ignored.erase(it);
  }
  return value;
}

// torchrun's etcd rendezvous: --rdzv-endpoint is the coordinator's etcd
// (coordinator_spec.h), read as torchrun reads it (parse_rendezvous_endpoint):
// one HOST[:PORT], port 2379 when none, an IPv6 address in brackets. Not node
// 0 and no join; --rdzv-id and --rdzv-conf stay ignored.
constexpr const char* kTorchEtcdPort = "2379";

Status ApplyEtcdRendezvous(const std::string& backend, const RawOptions& raw, const std::vector<TypedOption>& given,
                           std::vector<RawOptions::Ignored>& ignored, CliOptions& o) {
  const std::string backend_flag = Spelled(given, {"--rdzv-backend", "--rdzv_backend"}) + " " + backend;
  const std::string endpoint_flag = Spelled(given, {"--rdzv-endpoint", "--rdzv_endpoint"});
  const std::string& text = raw.rdzv_endpoint;
  if (text.empty())
    return Status::InvalidArgument(fmt::format(
        "{}: expected --rdzv-endpoint HOST:PORT, the etcd that the coordinator's failover uses (or the job file's "
        "coordinator: section)", backend_flag));
  if (text.find(',') != std::string::npos)
    return Status::InvalidArgument(fmt::format(
        "{} {}: torchrun's etcd rendezvous takes one endpoint; list several in the job file's coordinator: etcd: "
        "[HOST:PORT, ...]", endpoint_flag, Shown(text)));
  const bool bracketed = text.front() == '[' && text.back() == ']';
  const std::string endpoint = bracketed || text.find(':') == std::string::npos ? text + ":" + kTorchEtcdPort : text;
  if (!IsEtcdEndpoint(endpoint))
    return Status::InvalidArgument(fmt::format(
        "{} (with {}): expected HOST[:PORT], the etcd's address (port {} when none, an IPv6 address in brackets) "
        "with a port from 1 to 65535, got '{}'", endpoint_flag, backend_flag, kTorchEtcdPort, Shown(text)));
  o.coordinator_etcd = {endpoint};
  o.coordinator_etcd_flags = backend_flag + " " + endpoint_flag + " " + text;
  o.notices.push_back(o.coordinator_etcd_flags + ": the coordinator's etcd is " + endpoint +
                      "; " + kEtcdNotYet);
  TakeIgnored(ignored, "--rdzv-backend,--rdzv_backend");
  return Status::OK();
}

// --rdzv-endpoint and torchrun's c10d recipe: without --node_rank and with
// more than one node, every node runs the same command and gets its rank
// when it joins (per_node.h); --rdzv-id and --rdzv-conf then mean what they
// mean to torchrun. Otherwise --rdzv-endpoint names node 0 (--node_rank) or
// is ignored with the other --rdzv-* flags. The etcd backends: above.
Status ApplyRendezvous(const RawOptions& raw, const std::vector<TypedOption>& given,
                       std::vector<RawOptions::Ignored>& ignored, CliOptions& o) {
  std::string backend;  // the last --rdzv-backend given
  for (const RawOptions::Ignored& i : ignored)
    if (i.names == "--rdzv-backend,--rdzv_backend") backend = i.value;
  if (backend == "etcd" || backend == "etcd-v2") return ApplyEtcdRendezvous(backend, raw, given, ignored, o);
  const bool ranked = o.node_rank >= 0 || o.no_ssh;
  const bool many = o.selection.num_nodes > 1 || o.elastic_max_nodes > 1;
  const bool c10d = std::any_of(ignored.begin(), ignored.end(), [](const RawOptions::Ignored& i) {
    return i.names == "--rdzv-backend,--rdzv_backend" && i.value == "c10d";
  });
  o.rdzv_join = !ranked && many && (!raw.rdzv_endpoint.empty() || (c10d && !o.master_addr.empty()));
  if (!raw.rdzv_endpoint.empty()) {
    if (ranked || o.rdzv_join) o.rdzv_endpoint = raw.rdzv_endpoint;
    else ignored.push_back({"--rdzv-endpoint,--rdzv_endpoint", Shown(raw.rdzv_endpoint),
                            "dslaunch runs its own rendezvous: the coordinator and its store; it names node 0 "
                            "in the per-node form only (--node_rank, or --nnodes above 1)"});
  }
  if (!o.rdzv_join) return Status::OK();
  TakeIgnored(ignored, "--rdzv-backend,--rdzv_backend");
  if (auto id = TakeIgnored(ignored, "--rdzv-id,--rdzv_id")) o.rdzv_id = *id;
  if (auto conf = TakeIgnored(ignored, "--rdzv-conf,--rdzv_conf")) {
    DS_ASSIGN_OR_RETURN(o.rdzv_conf, ParseRendezvousConf(Spelled(given, {"--rdzv-conf", "--rdzv_conf"}), *conf));
  }
  return Status::OK();
}

}  // namespace

void DeclareCompatOptions(CLI::App& app, CliOptions& o, RawOptions& raw) {
  DeclareCommandForm(app, o);
  DeclareDeepSpeedOptions(app, o, raw);
  DeclarePerNodeOptions(app, o, raw);
  DeclareIgnoredOptions(app, raw);
}

Status ApplyRaw(const RawOptions& raw, const std::vector<TypedOption>& given, CliOptions& o) {
  o.selection.include_flag = Spelled(given, {"--include", "-i"});
  o.selection.exclude_flag = Spelled(given, {"--exclude", "-e"});
  if (!raw.connect_timeout.empty()) {
    const std::string flag = Spelled(given, {"--connect-timeout", "--connect_timeout"});
    auto s = ParseSeconds(raw.connect_timeout);
    if (!s || *s <= 0)
      return Status::InvalidArgument(flag + ": expected a duration such as 10s or 500ms, got '" +
                                     Shown(raw.connect_timeout) + "'");
    if (!InRange(*s, kConnectTimeoutRange))
      return Status::InvalidArgument(flag + ": expected " + RangeText(kConnectTimeoutRange) + ", got '" +
                                     Shown(raw.connect_timeout) + "'");
    o.connect_timeout = *s;
    o.connect_timeout_set = true;
  }
  if (!raw.ssh_port.empty()) {
    DS_ASSIGN_OR_RETURN(o.ssh_port, IntOption(Spelled(given, {"--ssh_port", "--ssh-port"}), raw.ssh_port, 1, 65535));
  }
  if (!raw.fanout.empty()) {
    DS_ASSIGN_OR_RETURN(o.fanout, IntOption(Spelled(given, {"--fanout"}), raw.fanout, 1, kMaxWorldSize));
  }
  if (!raw.fanout_tree.empty()) {
    o.fanout_tree_flag = Spelled(given, {"--fanout-tree", "--fanout_tree"});
    DS_ASSIGN_OR_RETURN(o.fanout_tree, IntOption(o.fanout_tree_flag, raw.fanout_tree, 2, 1024));
  }
  if (!raw.master_port.empty()) {
    DS_ASSIGN_OR_RETURN(o.master_port, IntOption(Spelled(given, {"--master_port", "--master-port"}), raw.master_port,
                                                 0, 65535, " (0: a free port per generation)"));
  }
  if (!raw.max_restarts.empty()) {
    DS_ASSIGN_OR_RETURN(o.max_restarts, IntOption(Spelled(given, {"--max_restarts", "--max-restarts"}),
                                                  raw.max_restarts, 0, 1 << 20));
  }
  if (!raw.num_nodes.empty()) DS_RETURN_IF_ERROR(ApplyNumNodes(raw.num_nodes, given, o));
  if (!raw.node_rank.empty()) {
    DS_ASSIGN_OR_RETURN(o.node_rank, IntOption(Spelled(given, {"--node_rank", "--node-rank"}), raw.node_rank, 0,
                                               kMaxWorldSize - 1));
  }
  DS_RETURN_IF_ERROR(ApplyElasticBounds(raw, given, o));
  std::vector<RawOptions::Ignored> ignored = raw.ignored;
  DS_RETURN_IF_ERROR(ApplyRendezvous(raw, given, ignored, o));
  if (!raw.num_gpus.empty()) DS_RETURN_IF_ERROR(ApplyNprocPerNode(raw.num_gpus, given, o));
  std::vector<std::string> launcher_args;
  if (!raw.launcher_args.empty()) {
    DS_ASSIGN_OR_RETURN(launcher_args,
                        ShellSplit(raw.launcher_args, Spelled(given, {"--launcher_args", "--launcher-args"})));
  }
  DS_RETURN_IF_ERROR(ApplyLauncher(raw.launcher, launcher_args, given, o));
  if (!raw.local_ranks_filter.empty()) DS_RETURN_IF_ERROR(ApplyLocalRanksFilter(raw.local_ranks_filter, given, o));
  DS_RETURN_IF_ERROR(ApplyStreams(raw, given, o));
  DS_RETURN_IF_ERROR(ApplyEachRankLog(raw.each_rank_log, given, o));
  if (!o.bind_core_list.empty()) o.bind_cores = true;
  if (o.module && o.no_python)
    return Status::InvalidArgument("-m/--module and --no-python: give one of them (a module always runs under python)");
  if (!ignored.empty()) o.notices.push_back(IgnoredNotice(ignored, given));
  return Status::OK();
}

}  // namespace ds::cli
