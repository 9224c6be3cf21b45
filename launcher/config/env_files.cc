#include "launcher/config/env_files.h"

#include <sstream>

#include <fmt/format.h>

#include "common/files.h"
#include "common/strings.h"
#include "launcher/config/env_limits.h"
#include "launcher/config/job_spec.h"

namespace ds {
namespace {

// A value as written after '=' -> the value, or the problem (without file:line).
using ValueParser = Result<std::string> (*)(std::string_view written, const std::string& key);

// .dslaunch_env: '...' literal, "..." with \" \\ \n \t escapes, else raw up to " #".
Result<std::string> DotEnvValue(std::string_view written, const std::string& key) {
  std::string_view v = Trim(written);
  std::string value;
  if (v.empty() || (v[0] != '\'' && v[0] != '"')) return std::string(Trim(v.substr(0, v.find(" #"))));
  const char q = v[0];
  size_t i = 1;
  bool closed = false;
  for (; i < v.size(); ++i) {
    char c = v[i];
    if (c == q) { closed = true; ++i; break; }
    if (q == '"' && c == '\\' && i + 1 < v.size()) {
      char n = v[++i];
      value.push_back(n == 'n' ? '\n' : n == 't' ? '\t' : n);
      continue;
    }
    value.push_back(c);
  }
  if (!closed) return Status::InvalidArgument(fmt::format("unterminated {} quote in the value of {}", q, key));
  std::string_view rest = Trim(v.substr(i));
  if (!rest.empty() && rest[0] != '#')
    return Status::InvalidArgument(fmt::format("unexpected text after the quoted value of {}: '{}'", key, rest));
  return value;
}

// .deepspeed_env: everything after the first '=', surrounding whitespace removed.
Result<std::string> DeepSpeedValue(std::string_view written, const std::string&) {
  return std::string(Trim(written));
}

// The line grammar both files share: blank and '#' lines skipped, KEY=...,
// KEY a name users may set; `allow_export` takes an `export ` prefix.
// Errors are "path:line: what".
Result<DotEnv> ParseEnvText(const std::string& text, const std::string& path, bool allow_export,
                            ValueParser parse_value) {
  DotEnv out;
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    auto err = [&](const std::string& what) {
      return Status::InvalidArgument(PrintableText(fmt::format("{}:{}: {}", path, lineno, what)));
    };
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (allow_export && StartsWith(line, "export ")) line = Trim(line.substr(7));
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return err(fmt::format("expected KEY=VALUE, got '{}'", Printable(line)));
    std::string key(Trim(line.substr(0, eq)));
    if (!IsEnvVarName(key)) return err(fmt::format("expected a variable name before '=', got '{}'", Printable(key)));
    // The job file's env: rule (IsUserSettableEnv): what dslaunch sets for
    // every worker cannot be changed behind --dry-run's back.
    if (!IsUserSettableEnv(key))
      return err(fmt::format("{} is set by dslaunch for every worker and cannot be overridden", key));
    Result<std::string> value = parse_value(line.substr(eq + 1), key);
    if (!value.ok()) return err(value.status().message());
    if (std::string problem = EnvEntryProblem(key, *value); !problem.empty()) return err(problem);
    out.emplace_back(std::move(key), std::move(value).value());
  }
  return out;
}

}  // namespace

Result<DotEnv> ParseDotEnv(const std::string& text, const std::string& path) {
  return ParseEnvText(text, path, /*allow_export=*/true, DotEnvValue);
}

Result<DotEnv> ParseDeepSpeedEnv(const std::string& text, const std::string& path) {
  return ParseEnvText(text, path, /*allow_export=*/false, DeepSpeedValue);
}

namespace {

using Parser = Result<DotEnv> (*)(const std::string&, const std::string&);

// Reads `path` with `parse`; a missing file is an empty result. What it
// sets reaches every worker (BASH_ENV, LD_PRELOAD, PYTHONPATH): it is read
// only when it is ours or root's and nobody else may change it.
Result<DotEnv> LoadEnvFile(const std::string& path, Parser parse, bool* found = nullptr) {
  Result<std::string> text = ReadTrustedTextFile(path, "env file");
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return DotEnv{};  // optional file
    return text.status();
  }
  if (found != nullptr) *found = true;
  return parse(*text, path);
}

// <home>/<name> then <dir>/<name>, each once; an absolute name alone.
std::vector<std::string> EnvFilePaths(const std::string& home, const std::string& dir, const std::string& name) {
  if (!name.empty() && name[0] == '/') return {name};
  std::vector<std::string> paths;
  if (!home.empty()) paths.push_back(home + "/" + name);
  std::string local = (dir.empty() ? std::string(".") : dir) + "/" + name;
  if (paths.empty() || paths[0] != local) paths.push_back(local);
  return paths;
}

Result<DotEnv> LoadEnvFiles(const std::vector<std::string>& paths, Parser parse, bool* found) {
  DotEnv out;
  for (const auto& p : paths) {
    DS_ASSIGN_OR_RETURN(DotEnv e, LoadEnvFile(p, parse, found));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

}  // namespace

Result<DotEnv> LoadDotEnv(const std::string& path) { return LoadEnvFile(path, ParseDotEnv); }

Result<DotEnv> LoadDotEnvFiles(const std::string& home, const std::string& dir) {
  return LoadEnvFiles(EnvFilePaths(home, dir, ".dslaunch_env"), ParseDotEnv, nullptr);
}

Result<DotEnv> LoadDeepSpeedEnvFiles(const std::string& home, const std::string& dir, const std::string& name) {
  const std::vector<std::string> paths = EnvFilePaths(home, dir, name.empty() ? ".deepspeed_env" : name);
  bool found = false;
  DS_ASSIGN_OR_RETURN(DotEnv out, LoadEnvFiles(paths, ParseDeepSpeedEnv, &found));
  if (!name.empty() && !found) {
    std::string where;
    for (const auto& p : paths) where += (where.empty() ? "" : " or ") + p;
    return Status::NotFound("DS_ENV_FILE names '" + name + "', but there is no " + where);
  }
  return out;
}

}  // namespace ds
