// The registry of every environment variable dslaunch reads (NCCL_PARAM
// style). Each variable is declared once in env_registry.cc with its type,
// default and one line of help; env_registry.cc is the only file that calls
// getenv. `dslaunch env` prints the table. Thread-safe for reads (the process
// environment must not be modified concurrently).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/status.h"

namespace ds {

// Environment variables (or any name=value pairs) in order: what a process's
// environment, a job's worker environment and an Assign's env all are.
using KeyValues = std::vector<std::pair<std::string, std::string>>;

enum class EnvType { kString, kInt, kBool, kSeconds };

// Who sets a variable: the user (a setting), or dslaunch for its workers (the
// worker contract, read by dstrain and any torchrun-style program).
enum class EnvScope { kSetting, kWorkerContract };

struct EnvParam {
  const char* name;
  EnvType type;
  const char* default_value;  // as text; "" = unset
  EnvScope scope;
  const char* help;
  DurationRange range{};      // kSeconds: the values allowed (common/duration.h)
};

// All registered variables, in table order.
const std::vector<EnvParam>& EnvParams();

// The registered parameter `name`, or nullptr.
const EnvParam* FindEnvParam(const std::string& name);

// Typed reads. `name` must be registered (checked). An unset or empty
// variable yields its default; a malformed value yields the default and a
// warning on stderr naming the variable and what was expected.
std::string EnvString(const char* name);
int64_t EnvInt(const char* name);
bool EnvBool(const char* name);
double EnvSeconds(const char* name);
// A kSeconds variable checked as a setting must be: unset or empty yields the
// default; a malformed value or one outside its range is an error naming the
// variable, e.g. "DSLAUNCH_STOP_GRACE='2d': expected a duration such as 500ms,
// 3s or 2m" or "DSLAUNCH_CONNECT_TIMEOUT='5000h': expected a duration between
// 10ms and 1h".
Result<double> EnvDuration(const char* name);
// The raw value if the variable is set (even when empty); nullopt otherwise.
std::optional<std::string> EnvRaw(const char* name);

// Any variable, registered or not (used to snapshot the environment for child
// processes and to read user-provided names such as $HOME).
std::optional<std::string> GetAnyEnv(const std::string& name);
KeyValues ProcessEnvironment();

// The table as `dslaunch env` prints it, with current values.
std::string FormatEnvTable();

}  // namespace ds
