// Internal to cli.cc: the options CLI11 hands over as text and the checks
// that turn them into CliOptions, so that every range error reads
// "--fanout: expected an integer between 1 and 1048576, got '-1'" (never
// CLI11's "1.79769e+308"), and the flags that only DeepSpeed's launcher or
// torchrun have: mapped onto dslaunch's options, or accepted and ignored
// with one notice. Not a public interface (CliOptions is); pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/status.h"
#include "launcher/cmd/cli.h"
#include "launcher/cmd/option_words.h"

namespace ds::cli {

// Option values as typed, checked and converted by ApplyRaw.
struct RawOptions {
  std::string connect_timeout;
  std::string ssh_port;
  std::string fanout;
  std::string fanout_tree;
  std::string master_port;
  std::string max_restarts;
  std::string num_nodes;          // N, or MIN:MAX (torchrun's elastic bounds)
  std::string num_gpus;           // N, auto, gpu or cpu
  std::string min_elastic_nodes;
  std::string max_elastic_nodes;
  std::string launcher = "auto";  // any case
  std::string launcher_args;
  std::string local_ranks_filter;
  std::string redirects;          // -r/--redirects 0-3 or L:N,...
  std::string tee;                // -t/--tee
  std::string each_rank_log;      // --enable_each_rank_log DIR
  std::string node_rank;          // --node_rank R (the per-node launch form)
  std::string rdzv_endpoint;      // --rdzv-endpoint HOST:PORT
  std::string dry_run;            // --dry-run (CLI11 gives "true"), --dry-run=short or =full
  // One per ignored flag given: {its declared names, its value ("" for a flag), why}; the notice
  // names it as typed.
  struct Ignored {
    std::string names, value, why;
  };
  std::vector<Ignored> ignored;
};

// Declares DeepSpeed's and torchrun's own flags on `app` (group "DeepSpeed /
// torchrun compatibility").
void DeclareCompatOptions(CLI::App& app, CliOptions& o, RawOptions& raw);

// --launcher's values: auto, local, ssh, pdsh, slurm, openmpi, mpich.
const std::vector<std::string>& LauncherNames();

// Checks and converts every RawOptions field into `o`. `given` are the
// option words as typed (for the spelling named in messages). Errors are
// InvalidArgument naming the option as typed, the accepted values and the
// value given.
Status ApplyRaw(const RawOptions& raw, const std::vector<TypedOption>& given, CliOptions& o);

}  // namespace ds::cli
