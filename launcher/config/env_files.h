// .dslaunch_env files: KEY=VALUE lines added to every worker's environment
// (like DeepSpeed's .deepspeed_env), read from $HOME then the working
// directory (later wins). Grammar per line: blank lines and '#' comments are
// skipped; an optional `export ` prefix; KEY is [A-Za-z_][A-Za-z0-9_]*;
// VALUE is raw text, or '...' (literal) or "..." (\" \\ \n \$ escapes) to keep
// spaces, '#' and quotes. Values are data: nothing is expanded. Pure parser.
// KEY follows the job file's env: rule (IsUserSettableEnv): dslaunch's own
// worker variables (RANK, MASTER_PORT, DSLAUNCH_JOB_ID, ...) are errors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ds {

using DotEnv = std::vector<std::pair<std::string, std::string>>;

// Errors name path:line and what was expected:
// ".dslaunch_env:3: expected KEY=VALUE, got 'FOO'",
// ".dslaunch_env:2: RANK is set by dslaunch for every worker and cannot be overridden".
Result<DotEnv> ParseDotEnv(const std::string& text, const std::string& path);
// Reads the file; a missing file is an empty result, not an error.
Result<DotEnv> LoadDotEnv(const std::string& path);
// $HOME/.dslaunch_env then <dir>/.dslaunch_env (dir "" = current directory).
Result<DotEnv> LoadDotEnvFiles(const std::string& dir);

}  // namespace ds
