// dslaunch: the command line. Reads top to bottom: the subcommand table, then
// one handler per subcommand, then main(), which picks the handler. Only this
// file turns a Status into an exit code (launcher/report/exit_status.h).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/version.h"
#include "launcher/cmd/attach_cmd.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/cluster_cli.h"
#include "launcher/cmd/completion.h"
#include "launcher/cmd/dry_run.h"
#include "launcher/cmd/launch_choice.h"
#include "launcher/cmd/per_node.h"
#include "launcher/cmd/plan_from_cli.h"
#include "launcher/cmd/preflight.h"
#include "launcher/cmd/run.h"
#include "launcher/cmd/report_cmd.h"
#include "launcher/cmd/status_cmd.h"
#include "launcher/cmd/subcommand_typo.h"
#include "launcher/join/rendezvous_claim.h"
#include "launcher/report/exit_status.h"

namespace ds {
namespace {

using Args = std::vector<std::string>;

int CmdRun(const Args& args);
int CmdEnv(const Args& args);
int CmdCheck(const Args& args);
int CmdCluster(const Args& args);
int CmdCompletion(const Args& args);
int CmdStatus(const Args& args);
int CmdAttach(const Args& args);
int CmdReport(const Args& args);

struct Subcommand {
  const char* name;
  const char* help;
  int (*handler)(const Args& args);
};

// The one table: help and dispatch both come from it (ninja's kTools).
constexpr Subcommand kSubcommands[] = {
    {"run", "start a job (the default: `dslaunch [options] job.yaml` means `dslaunch run ...`)", CmdRun},
    {"env", "print every DSLAUNCH_* variable and the worker contract: type, default, current value, help", CmdEnv},
    {"check", "preflight: reach every host of the hostfile and check it can run dsagent", CmdCheck},
    {"cluster", "up|down|status|run: a training cluster of Docker containers on an overlay network",
     CmdCluster},
    {"status", "[--json] [--all | JOB]: this user's running jobs on this machine (or JOB's record after it ended; --all: every job, one line each)", CmdStatus},
    {"attach", "[--wait S] [JOB]: follow a running job from any host of it (its output, status line and end; through a failover); exits with its code", CmdAttach},
    {"report", "[JOB] [-o FILE]: one HTML page of an ended job: a timeline per node, restarts, samples/s", CmdReport},
    {"completion", "bash: print the shell completion script (the package installs it)", CmdCompletion},
};

// A join-form node refused by the rendezvous's host (another secret or job),
// as dsagent's exit when node 0 refuses its key.
constexpr int kExitJoinRefused = 5;

// Prints "dslaunch: error: <message>"; returns `code`.
int Error(const Status& st, int code) {
  std::cerr << "dslaunch: error: " << st.message() << "\n";
  return code;
}

// Errors in the command line, the hostfile or the job file.
int Usage(const Status& st) { return Error(st, kExitUsage); }

// A subcommand's own exit code, or its error's: bad input (InvalidArgument)
// is a usage error, anything else a launch failure.
int ExitCode(const Result<int>& r) {
  if (r.ok()) return *r;
  return Error(r.status(), r.status().code() == Status::Code::kInvalidArgument ? kExitUsage : kExitFailure);
}

std::string HelpText() {
  std::string out = CliHelpText();
  out += "\nSubcommands:\n";
  for (const Subcommand& s : kSubcommands) {
    std::string name = s.name;
    out += "  " + name + std::string(name.size() < 8 ? 8 - name.size() : 1, ' ') + s.help + "\n";
  }
  out += "\nExit status: 0 ok; 2 usage or input error; otherwise the first failing worker's code, "
         "or 128+signal if it was killed.\n";
  return out;
}

const char* kCheckHelp =
    "usage: dslaunch check [--hostfile FILE] [--launcher NAME] [-i/-e SPEC] [--num_nodes N] [options] [job.yaml]\n"
    "  checks every host the same command line would run on, the way the run would start its agents:\n"
    "  over ssh (--launcher ssh, pdsh, openmpi, mpich) it reaches each host and checks dsagent, the working\n"
    "  directory, slots against GPUs or cores, the interface to the master, the master port and the clock;\n"
    "  hosts that run locally (every host this machine, or --launcher local) are checked here, without ssh.\n"
    "  Without --hostfile: DSLAUNCH_DEFAULT_HOSTFILE when it exists, else this machine, as for a run.\n"
    "  The job file, when given, brings its ssh:, network: and working_dir. Every option of `dslaunch --help`\n"
    "  is accepted. Exit status: 0 every host ready, 1 one is not, 2 bad input.\n";

int CmdRun(const Args& args) {
  Result<CliOptions> cli = ParseCli(args);
  if (!cli.ok()) return Usage(cli.status());
  // A standby the leader started (launcher/cmd/standby.h) reads the job's files where the leader did.
  if (!cli->standby_cwd.empty() && ::chdir(cli->standby_cwd.c_str()) != 0)
    return Error(Status::IOError(fmt::format("--standby-cwd {}: {}", cli->standby_cwd, std::strerror(errno))),
                 kExitFailure);
  if (cli->help) {
    std::cout << HelpText();
    return kExitSuccess;
  }
  if (cli->version) {
    std::cout << "dslaunch " << DSLAUNCH_VERSION << "\n";
    return kExitSuccess;
  }
  for (const std::string& line : cli->notices) std::cerr << "dslaunch: " << line << "\n";
  const MachineFacts local = DetectLocalMachine();
  Result<std::optional<PerNodeLaunch>> per_node = ResolvePerNode(*cli, local.env);
  if (!per_node.ok()) return Usage(per_node.status());
  PerNodeLaunch* pn = *per_node ? &**per_node : nullptr;
  if (pn && !pn->notice.empty()) std::cerr << "dslaunch: " << pn->notice << "\n";
  if (pn && pn->secret_from == PerNodeLaunch::Secret::kInsecure)
    std::cerr << "dslaunch: WARNING: --insecure: the per-node job at " << pn->addr << ":" << pn->port
              << " is keyed with a constant everyone knows: anyone who reaches that port can join and run workers, "
                 "and anyone who binds it first can make the other nodes run commands of theirs\n";
  if (pn && pn->node_rank > 0 && !cli->dry_run) return ExitCode(ExecPerNodeAgent(*pn, *cli));
  if (pn && pn->join && !cli->dry_run) {  // torchrun's c10d rule: the node that binds the endpoint hosts
    Result<UniqueFd> claim = ClaimRendezvous(*pn);
    if (!claim.ok()) return ExitCode(claim.status());
    if (claim->get() < 0) {
      const Status st = JoinAndExecAgent(*pn, *cli);
      return st.code() == Status::Code::kPermissionDenied ? Error(st, kExitJoinRefused) : ExitCode(st);
    }
    pn->node_rank = 0;
    pn->listen_fd = claim->release();  // the coordinator's from now on
  }
  PlanNotes notes;
  Result<LaunchPlan> plan = PlanFromCli(*cli, local, &notes, nullptr, pn ? pn->nnodes : 0);
  if (!plan.ok()) return Usage(plan.status());
  if (!cli->standby)  // a standby reads the leader's plan again: the leader said it
    for (const std::string& line : notes.notices) std::cerr << "dslaunch: " << line << "\n";
  if (cli->dry_run) {
    // The run's own decisions and refusals (launch_choice.h), so a dry run
    // that passes is a run that starts.
    Result<LaunchChoice> choice = ChooseLaunch(*plan, *cli, pn);
    if (!choice.ok()) return Usage(choice.status());
    DryRunOptions opts;
    opts.launcher = choice->launcher == cli->launcher ? cli->launcher : choice->launcher + " (" + cli->launcher + ")";
    opts.hostfile_source = notes.hostfile_source;
    opts.inherited = ProcessEnvironment();
    opts.short_form = cli->dry_run_short;
    std::cout << FormatDryRun(*plan, opts);
    return kExitSuccess;
  }
  if (pn && pn->join)
    std::cerr << "dslaunch: job " << pn->job_id << ": this node hosts the rendezvous " << pn->addr << ":" << pn->port
              << " as node 0 (" << pn->source << "); the other nodes get their rank as they join, "
              << (pn->min_nodes < pn->nnodes ? fmt::format("{} to {} nodes", pn->min_nodes, pn->nnodes)
                                             : fmt::format("{} nodes", pn->nnodes))
              << "\n";
  else if (pn)
    std::cerr << "dslaunch: node 0 of " << pn->nnodes << " (" << pn->source << "): the other nodes join at " << pn->addr
              << ":" << pn->port << "\n";
  return ExitCode(RunJob(*plan, *cli, pn));
}

int CmdEnv(const Args& args) {
  if (!args.empty()) {
    if (args[0] == "-h" || args[0] == "--help") {
      std::cout << "usage: dslaunch env\n  prints every DSLAUNCH_* variable and the worker contract\n";
      return kExitSuccess;
    }
    return Usage(Status::InvalidArgument("env: unexpected argument '" + args[0] + "'"));
  }
  std::cout << FormatEnvTable();
  return kExitSuccess;
}

int CmdCheck(const Args& args) {
  Result<CliOptions> cli = ParseCli(args, /*require_job=*/false);
  if (!cli.ok()) return Usage(cli.status());
  if (cli->help) {
    std::cout << kCheckHelp;
    return kExitSuccess;
  }
  return ExitCode(RunPreflight(*cli));
}

int CmdCluster(const Args& args) { return ExitCode(RunClusterCommand(args)); }

int CmdStatus(const Args& args) { return ExitCode(RunStatus(args, std::cout)); }

int CmdAttach(const Args& args) { return ExitCode(RunAttach(args)); }

int CmdReport(const Args& args) { return ExitCode(RunReport(args, std::cout)); }

// `dslaunch statu` is a typo, not a job (subcommand_typo.h), unless a
// program or a file has that name.
Status CheckFirstWord(const std::string& word) {
  std::vector<std::string> names;
  for (const Subcommand& s : kSubcommands) names.push_back(s.name);
  const std::string path = GetAnyEnv("PATH").value_or("/usr/bin:/bin");
  return CheckSubcommandTypo(word, names, [&path](const std::string& w) { return NamesProgram(w, path); });
}

int CmdCompletion(const Args& args) {
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::cout << "usage: dslaunch completion bash\n  prints the bash completion script; load it with\n"
                 "  source <(dslaunch completion bash), or install it (the package does) as\n"
                 "  /usr/share/bash-completion/completions/dslaunch\n";
    return kExitSuccess;
  }
  if (args.size() != 1 || args[0] != "bash")
    return Usage(Status::InvalidArgument("completion: expected `dslaunch completion bash`" +
                                         std::string(args.empty() ? "" : ", got '" + args[0] + "'")));
  WithClusterCompletion([](const CompletionCommand& cluster) {
    std::vector<CompletionCommand> subcommands;
    for (const Subcommand& s : kSubcommands) {
      CompletionCommand c{s.name};  // run and check: the main options
      if (c.word == "cluster") c = cluster;
      if (c.word == "env") c.no_options = true;
      if (c.word == "completion") c.words = {{"bash", nullptr, {}, true}};
      subcommands.push_back(c);
    }
    std::cout << CliBashCompletion(subcommands);
  });
  return kExitSuccess;
}

}  // namespace
}  // namespace ds

int main(int argc, char** argv) {
  ds::Args args(argv + 1, argv + argc);
  if (!args.empty()) {
    for (const ds::Subcommand& s : ds::kSubcommands) {
      if (args[0] == s.name) return s.handler(ds::Args(args.begin() + 1, args.end()));
    }
    if (ds::Status typo = ds::CheckFirstWord(args[0]); !typo.ok()) return ds::Usage(typo);
  }
  return ds::CmdRun(args);
}
