// A fake dstrain for the control channel tests (control_channel_test.cc):
// it finds its end of the channel in DSLAUNCH_CONTROL_FD, prints whether
// fd 4 is open (nothing else of the agent's may reach it), answers every
// WorkerReshape with WorkerReshaped (ok, or not ok when the set is "refuse"),
// printing what it was told, and exits 0 when the agent closes its end.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "agent/workers/control_channel.h"
#include "wire/protocol.h"

int main() {
  const char* env = std::getenv("DSLAUNCH_CONTROL_FD");
  if (env == nullptr) return 3;
  const int fd = std::atoi(env);
  std::printf("control fd %d, fd 4 %s\n", fd, ::fcntl(4, F_GETFD) == -1 ? "closed" : "open");
  std::fflush(stdout);
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0) return 4;
    auto f = ds::ReadControlFrame(fd);
    if (!f.ok()) return 0;  // the agent's end closed
    if (!*f) continue;
    auto m = ds::msg::WorkerReshape::Decode((*f)->payload);
    if ((*f)->type != ds::wire::MsgType::kWorkerReshape || !m.ok()) return 5;
    std::printf("reshape to generation %u rank %d of %u at step %lld\n", m->generation, m->rank, m->world,
                static_cast<long long>(m->step));
    std::fflush(stdout);
    const bool ok = m->set != "refuse";
    ds::msg::WorkerReshaped answer{m->generation, static_cast<uint8_t>(ok), ok ? "" : "refused as asked", 17};
    if (!ds::SendControlFrame(fd, ds::wire::MsgType::kWorkerReshaped, answer.Encode()).ok()) return 6;
  }
}
