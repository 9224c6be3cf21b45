#include "common/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ds {

uint64_t FdLimit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  return lim.rlim_cur;
}

Status RaiseFdLimit(uint64_t needed, const std::string& what) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return Status::IOError(fmt::format("getrlimit(RLIMIT_NOFILE): {}", std::strerror(errno)));
  if (lim.rlim_cur >= needed) return Status::OK();
  const rlimit before = lim;
  lim.rlim_cur = needed;
  if (lim.rlim_max < needed) lim.rlim_max = needed;
  if (::setrlimit(RLIMIT_NOFILE, &lim) == 0) return Status::OK();
  const std::string why = std::strerror(errno);
  // Not allowed past the hard limit: take what the hard limit gives.
  if (before.rlim_max > before.rlim_cur) {
    rlimit most = before;
    most.rlim_cur = before.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &most);
  }
  return Status::Unavailable(
      fmt::format("needs {} open files for {}; the limit is {} (hard {}) and cannot be raised ({}): raise it "
                  "with `ulimit -n {}` before starting, or in /etc/security/limits.conf (nofile), or for a "
                  "root process in /proc/sys/fs/nr_open",
                  needed, what, before.rlim_cur, before.rlim_max, why, needed));
}

}  // namespace ds
