// The `dslaunch cluster up|down|status|run` command line: parses the options
// of each verb and calls launcher/cluster. Returns the verb's exit code (0,
// or what `cluster status`/`run` ended with), or its error for main.cc to
// print and turn into an exit code (InvalidArgument: usage, 2; else 1).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ds {

Result<int> RunClusterCommand(const std::vector<std::string>& args);

// Calls `use` with the completion entry of `cluster` and its verbs (their
// apps live for the call): launcher/cmd/completion.h.
struct CompletionCommand;
void WithClusterCompletion(const std::function<void(const CompletionCommand&)>& use);

}  // namespace ds
