// StepHeartbeat over UDP: one datagram "rank step" (two big-endian i64) per
// Beat(), sent non-blocking to DSLAUNCH_HEARTBEAT_ADDR. Errors are ignored by
// design (step_heartbeat.h).
#include "common/step_heartbeat.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/client_conn.h"
#include "common/env_registry.h"
#include "common/frame_io.h"

namespace ds {
namespace {

class NoopHeartbeat final : public StepHeartbeat {
 public:
  void Beat(int64_t) override {}
};

class UdpHeartbeat final : public StepHeartbeat {
 public:
  UdpHeartbeat(UniqueFd fd, int64_t rank) : fd_(std::move(fd)), rank_(rank) {}
  void Beat(int64_t step) override {
    Bytes b = PayloadWriter().I64(rank_).I64(step).Take();
    (void)::send(fd_.get(), b.data(), b.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

 private:
  UniqueFd fd_;
  int64_t rank_;
};

}  // namespace

std::unique_ptr<StepHeartbeat> StepHeartbeat::FromEnv() {
  std::string addr = EnvString("DSLAUNCH_HEARTBEAT_ADDR");
  auto hp = addr.empty() ? Result<std::pair<std::string, int>>(Status::NotFound("")) : SplitHostPort(addr);
  if (!hp.ok()) return std::make_unique<NoopHeartbeat>();
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* res = nullptr;
  if (::getaddrinfo(hp->first.c_str(), std::to_string(hp->second).c_str(), &hints, &res) != 0)
    return std::make_unique<NoopHeartbeat>();
  UniqueFd fd(::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  bool ok = fd.get() >= 0 && ::connect(fd.get(), res->ai_addr, res->ai_addrlen) == 0;
  freeaddrinfo(res);
  if (!ok) return std::make_unique<NoopHeartbeat>();
  return std::make_unique<UdpHeartbeat>(std::move(fd), EnvInt("RANK"));
}

}  // namespace ds
