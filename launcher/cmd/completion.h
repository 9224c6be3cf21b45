// Shell completion generated from the CLI11 apps the command line parses
// with, so that a flag the parser knows is a flag the shell offers, in both
// spellings, and nothing else. `dslaunch completion bash` prints the script;
// the package installs it as share/bash-completion/completions/dslaunch.
// What a value completes to comes from the option's type name: a name with
// FILE completes file names, DIR directories, "{a,b,c}" those words,
// PATH file names too; other values (a number, a host list) nothing. Words that are not
// an option's value complete to the subcommands (first word only), then to
// job files (*.yaml, *.yml), scripts (*.py) and directories.
// Pure; returns text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace ds {

// A subcommand word and its own app; `app` may be null (the subcommand takes
// the main app's options, e.g. `check`), and `words` are its own
// subcommands (e.g. cluster's up/down/status/run, each with its own app).
struct CompletionCommand {
  std::string word;
  const CLI::App* app = nullptr;
  std::vector<CompletionCommand> words;
  bool no_options = false;  // takes no option at all (e.g. `env`): only -h/--help
};

// The bash script for `program`: a function _<program> registered with
// `complete -F`. Needs bash 4 and nothing of bash-completion itself.
std::string BashCompletion(const std::string& program, const CLI::App& main_app,
                           const std::vector<CompletionCommand>& subcommands);

}  // namespace ds
