// Runs a command as another local user would: nobody:nogroup with no
// supplementary groups (setpriv), for tests of what such a user can do to a
// job's files and ports. Blocking; the caller owns nothing afterwards.
#pragma once

#include <string>
#include <vector>

namespace ds::testing {

// Runs argv (argv[0] found in PATH) as nobody; true when it exits 0.
bool AsNobody(std::vector<std::string> argv);

}  // namespace ds::testing
