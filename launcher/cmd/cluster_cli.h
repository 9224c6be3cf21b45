// The `dslaunch cluster up|down|status|run` command line: parses the options
// of each verb and calls launcher/cluster. Returns the exit code; prints its
// errors itself (usage errors exit 2, failures 1).
#pragma once

#include <string>
#include <vector>

namespace ds {

int RunClusterCommand(const std::vector<std::string>& args);

}  // namespace ds
