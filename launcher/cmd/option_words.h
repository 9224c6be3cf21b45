// The option words of a command line, as typed, matched against the options
// declared on a CLI11 app before CLI11 parses them: argparse's manners, which
// torchrun's and DeepSpeed's users type every day. A long option may be
// written as any unambiguous prefix (`--nproc 2` is --nproc_per_node); an
// ambiguous prefix is an error listing the candidates; an unknown option gets
// "did you mean --X"; a long option written with one dash (`-hostfile`) is an
// error naming the two-dash spelling (CLI11 would read it as -h, or as -m
// with the value "aster_port"). Every message quotes the word as typed.
// Only the words before the job's command are looked at: the first word that
// is not an option or an option's value, or `--`, ends them.
// Pure; internal to the command line (cli.cc, cli_compat.cc).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/status.h"

namespace ds::cli {

// One option word: as typed ("--nproc", "-H") and the declared name it
// stands for ("--nproc_per_node", "-H"), without any "=value".
struct TypedOption {
  std::string typed;
  std::string name;
};

struct OptionWords {
  std::vector<std::string> args;     // the command line with every prefix written out in full
  std::vector<TypedOption> options;  // every option word given, in order
};

// Resolves `args` against `app`'s options. InvalidArgument, quoting the word
// as typed and ending "(see `help_hint`)", for an unknown option, an
// ambiguous prefix, a long option with one dash, or an option that needs a
// value and is the last word.
Result<OptionWords> ResolveOptionWords(const std::vector<std::string>& args, const CLI::App& app,
                                       const std::string& help_hint);

// The word `options` typed for the option one of `names` declares (the last
// one given wins, as CLI11's value does); the first name when none was given.
std::string Spelled(const std::vector<TypedOption>& options, const std::vector<std::string>& names);

}  // namespace ds::cli
