#include "common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

namespace ds {

CStringArray::CStringArray(std::vector<std::string> strings) : strings_(std::move(strings)) {
  for (auto& s : strings_) ptrs_.push_back(s.data());
  ptrs_.push_back(nullptr);
}

CStringArray::CStringArray(const std::vector<std::pair<std::string, std::string>>& env) {
  strings_.reserve(env.size());
  for (const auto& [k, v] : env) strings_.push_back(k + "=" + v);
  for (auto& s : strings_) ptrs_.push_back(s.data());
  ptrs_.push_back(nullptr);
}

pid_t ForkWithSignalsBlocked() {
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return pid;
}

void ResetSignalsInChild() {
  for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

void CloseOnExecAboveStderr(std::initializer_list<int> keep) {
  if (::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {  // before Linux 5.11
    rlimit lim{};
    const rlim_t top = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? lim.rlim_cur : 65536;
    for (rlim_t fd = 3; fd < top; ++fd) ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  }
  for (int fd : keep) ::fcntl(fd, F_SETFD, 0);
}

int AddCloseAboveStderr(posix_spawn_file_actions_t* fa) { return ::posix_spawn_file_actions_addclosefrom_np(fa, 3); }

}  // namespace ds
