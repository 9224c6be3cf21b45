#include "agent/warm/command.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/env_registry.h"
#include "common/strings.h"

namespace ds {
namespace {

bool IsPythonName(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name == "python" || name == "python3") return true;
  if (!name.starts_with("python3.") || name.size() == 8) return false;
  return std::all_of(name.begin() + 8, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One word of single-letter flags without a value ("-u", "-uB").
bool IsPlainFlags(const std::string& a) {
  if (a.size() < 2 || a[0] != '-' || a[1] == '-') return false;
  return std::all_of(a.begin() + 1, a.end(),
                     [](char c) { return std::string_view("bBdEiIOqsSuvx").find(c) != std::string_view::npos; });
}

}  // namespace

bool VariesPerGeneration(const std::string& name) {
  if (name == "OMP_NUM_THREADS") return false;  // OpenMP reads it when its library loads
  const EnvParam* p = FindEnvParam(name);
  return p != nullptr && p->scope == EnvScope::kWorkerContract;
}

std::optional<PythonCommand> SplitPythonCommand(const std::vector<std::string>& argv) {
  if (argv.empty() || !IsPythonName(argv[0])) return std::nullopt;
  PythonCommand c;
  c.interpreter.push_back(argv[0]);
  size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (IsPlainFlags(a)) {
      c.interpreter.push_back(a);
    } else if ((a == "-W" || a == "-X") && i + 1 < argv.size()) {
      c.interpreter.push_back(a);
      c.interpreter.push_back(argv[++i]);
    } else if ((a.starts_with("-W") || a.starts_with("-X")) && a.size() > 2) {
      c.interpreter.push_back(a);
    } else {
      break;
    }
  }
  if (i >= argv.size()) return std::nullopt;
  const std::string& first = argv[i];
  if (first == "-m") {
    if (i + 1 >= argv.size()) return std::nullopt;
  } else if (first.empty() || first[0] == '-') {
    return std::nullopt;  // -c, - (stdin), --help, an unknown flag
  }
  c.target.assign(argv.begin() + static_cast<ptrdiff_t>(i), argv.end());
  return c;
}

std::string SpareMismatch(const SpareStart& started, const SpareStart& assigned) {
  if (started.interpreter != assigned.interpreter)
    return fmt::format("the interpreter differs ('{}' then, '{}' now)", fmt::join(started.interpreter, " "),
                       fmt::join(assigned.interpreter, " "));
  if (started.working_dir != assigned.working_dir) return "the working directory differs";
  if (started.cpus != assigned.cpus) return "the cores differ";
  std::map<std::string, std::string> before(started.env.begin(), started.env.end());
  std::map<std::string, std::string> after(assigned.env.begin(), assigned.env.end());
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    if ((it == before.end() || it->second != v) && !VariesPerGeneration(k)) return k + " differs";
  }
  for (const auto& [k, v] : before)
    if (!after.count(k) && !VariesPerGeneration(k)) return k + " differs";
  return "";
}

std::optional<uint64_t> MemAvailableKiB(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib;
    return std::nullopt;
  }
  return std::nullopt;
}

std::string SparesDoNotFit(uint64_t available_kib, size_t spares) {
  const uint64_t need = kSpareHeadroomKiB + kSpareBudgetKiB * spares;
  if (available_kib >= need) return "";
  return fmt::format("MemAvailable is {} MiB, below the {} MiB that {} spare(s) need (2 GiB + 1 GiB each)",
                     available_kib >> 10, need >> 10, spares);
}

}  // namespace ds
