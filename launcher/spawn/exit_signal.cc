#include "launcher/spawn/exit_signal.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/clock.h"

namespace ds {

bool WaitReadable(int fd, double seconds) {
  using namespace std::chrono;
  auto until = steady_clock::now() + Seconds(seconds);
  while (true) {
    auto left = ceil<milliseconds>(until - steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::max<decltype(left)>(left, 0)));
    if (r > 0) return (p.revents & POLLIN) != 0;
    if (r == 0 || errno != EINTR) return false;
  }
}

Result<UniqueFd> MakeExitEvent() {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::IOError(std::string("eventfd: ") + std::strerror(errno));
  return UniqueFd(fd);
}

void RaiseExitEvent(int fd) {
  // The counter only grows; a reader that only polls never resets it.
  const uint64_t one = 1;
  (void)!::write(fd, &one, sizeof(one));
}

}  // namespace ds
