#include "common/subprocess.h"

#include <signal.h>
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

}  // namespace ds
