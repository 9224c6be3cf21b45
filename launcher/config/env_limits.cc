#include "launcher/config/env_limits.h"

#include <fmt/format.h>

namespace ds {

std::string EnvEntryProblem(const std::string& name, const std::string& value) {
  if (size_t nul = value.find('\0'); nul != std::string::npos)
    return fmt::format("the value of {} contains a NUL byte at offset {}", name, nul);
  const size_t bytes = name.size() + 1 + value.size() + 1;  // NAME=value\0
  if (bytes > kMaxExecStringBytes)
    return fmt::format("{}=... is {} bytes, over the kernel's limit of {} for one environment string "
                       "(MAX_ARG_STRLEN)", name, bytes, kMaxExecStringBytes);
  return "";
}

}  // namespace ds
