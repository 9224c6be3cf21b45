// What exec(2) accepts in a worker's environment and argv, checked when the
// job file, a .dslaunch_env or the hostfile is read, so that a value the
// kernel would refuse (E2BIG) or cut short (a NUL byte) is an error naming
// the file and line before anything starts. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>

namespace ds {

// Linux's MAX_ARG_STRLEN: the longest single argv or environment string
// ("NAME=value" with its terminating NUL) that execve accepts.
inline constexpr size_t kMaxExecStringBytes = 128 * 1024;

// "" when NAME=value can be passed to a worker; otherwise why not, e.g.
// "the value of FOO contains a NUL byte at offset 3" or
// "FOO=... is 131073 bytes, over the kernel's limit of 131072 for one
// environment string (MAX_ARG_STRLEN)".
std::string EnvEntryProblem(const std::string& name, const std::string& value);

}  // namespace ds
