// Env files: KEY=VALUE lines added to every worker's environment, read from
// $HOME then the working directory (later wins). Two grammars:
//
// .dslaunch_env (ours): Grammar per line: blank lines and '#' comments are
// skipped; an optional `export ` prefix; KEY is [A-Za-z_][A-Za-z0-9_]*;
// VALUE is raw text, or '...' (literal) or "..." (\" \\ \n \$ escapes) to keep
// spaces, '#' and quotes. Values are data: nothing is expanded. Pure parser.
// KEY follows the job file's env: rule (IsUserSettableEnv): dslaunch's own
// worker variables (RANK, MASTER_PORT, DSLAUNCH_JOB_ID, ...) are errors.
//
// .deepspeed_env (DeepSpeed's, read as DeepSpeed reads it): KEY=VALUE where
// VALUE is everything after the first '=', surrounding whitespace removed,
// quotes and '#' kept as written. Blank lines and lines starting with '#'
// are skipped (DeepSpeed would fail on them). Same KEY rule.
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
Result<DotEnv> ParseDeepSpeedEnv(const std::string& text, const std::string& path);
// Reads the file; a missing file is an empty result, not an error. Only a
// regular file of this user or root that its group and others cannot write
// is read (ReadTrustedTextFile): another one is an error naming it and why.
Result<DotEnv> LoadDotEnv(const std::string& path);
// <home>/.dslaunch_env then <dir>/.dslaunch_env (home "" = not read, dir "" =
// current directory).
Result<DotEnv> LoadDotEnvFiles(const std::string& home, const std::string& dir);
// DeepSpeed's lookup: `name` (DS_ENV_FILE; "" = .deepspeed_env) in <home>,
// then in <dir>; an absolute `name` is that one file. A name given in
// DS_ENV_FILE that exists in neither place is an error (NotFound) naming
// where it was looked for; the default name may be missing.
Result<DotEnv> LoadDeepSpeedEnvFiles(const std::string& home, const std::string& dir, const std::string& name);

}  // namespace ds
