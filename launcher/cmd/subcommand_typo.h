// A mistyped subcommand is not a job: `dslaunch statu` would otherwise start
// a program called `statu` on every slot of every node (and end with 127 on
// each). CheckSubcommandTypo refuses a first word that is within a small edit
// distance of a subcommand's name (common/strings.h DidYouMean) unless the
// word names a program: an executable on PATH, or a file that exists. The
// message says how to run such a program anyway (`--`). Pure apart from the
// file-system look-ups of NamesProgram; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

// True when `word` holds a '/' or names an existing file (relative to the
// working directory), or an executable file in one of `path`'s directories
// (`path` as in PATH: directories separated by ':').
bool NamesProgram(const std::string& word, const std::string& path);

// OK when `word` is a subcommand, is not near any of `subcommands`, starts
// with '-', or `names_program(word)` is true. Otherwise InvalidArgument:
// "unknown subcommand 'statu' (did you mean 'status'?); to run a program
// called 'statu' on every slot, put it after `--`: dslaunch [options] -- statu".
Status CheckSubcommandTypo(const std::string& word, const std::vector<std::string>& subcommands,
                           const std::function<bool(const std::string&)>& names_program);

}  // namespace ds
