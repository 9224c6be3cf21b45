#include "launcher/config/env_files.h"

#include <sstream>

#include <fmt/format.h>

#include "common/env_registry.h"
#include "common/files.h"
#include "common/strings.h"
#include "launcher/config/env_limits.h"
#include "launcher/config/job_spec.h"

namespace ds {
Result<DotEnv> ParseDotEnv(const std::string& text, const std::string& path) {
  DotEnv out;
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    auto err = [&](const std::string& what) {
      return Status::InvalidArgument(fmt::format("{}:{}: {}", path, lineno, what));
    };
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (StartsWith(line, "export ")) line = Trim(line.substr(7));
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return err(fmt::format("expected KEY=VALUE, got '{}'", line));
    std::string key(Trim(line.substr(0, eq)));
    if (!IsEnvVarName(key)) return err(fmt::format("expected a variable name before '=', got '{}'", key));
    // The job file's env: rule (IsUserSettableEnv): what dslaunch sets for
    // every worker cannot be changed behind --dry-run's back.
    if (!IsUserSettableEnv(key))
      return err(fmt::format("{} is set by dslaunch for every worker and cannot be overridden", key));
    std::string_view v = Trim(line.substr(eq + 1));
    std::string value;
    if (!v.empty() && (v[0] == '\'' || v[0] == '"')) {
      char q = v[0];
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
      if (!closed) return err(fmt::format("unterminated {} quote in the value of {}", q, key));
      std::string_view rest = Trim(v.substr(i));
      if (!rest.empty() && rest[0] != '#')
        return err(fmt::format("unexpected text after the quoted value of {}: '{}'", key, rest));
    } else {
      size_t hash = v.find(" #");
      value = std::string(Trim(v.substr(0, hash)));
    }
    if (std::string problem = EnvEntryProblem(key, value); !problem.empty()) return err(problem);
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

Result<DotEnv> LoadDotEnv(const std::string& path) {
  Result<std::string> text = ReadTextFile(path, ".dslaunch_env");
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) return DotEnv{};  // optional file
    return text.status();
  }
  return ParseDotEnv(*text, path);
}

Result<DotEnv> LoadDotEnvFiles(const std::string& dir) {
  DotEnv out;
  std::vector<std::string> paths;
  if (auto home = GetAnyEnv("HOME"); home && !home->empty()) paths.push_back(*home + "/.dslaunch_env");
  std::string local = (dir.empty() ? std::string(".") : dir) + "/.dslaunch_env";
  if (paths.empty() || paths[0] != local) paths.push_back(local);
  for (const auto& p : paths) {
    DS_ASSIGN_OR_RETURN(DotEnv e, LoadDotEnv(p));
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

}  // namespace ds
