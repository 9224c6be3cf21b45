// StepHeartbeat over UDP: one datagram "rank step token compute samples [stall [loss accuracy]]"
// (big-endian i64s around the worker's token) per Beat(), sent non-blocking to
// DSLAUNCH_HEARTBEAT_ADDR. Errors are ignored by design (step_heartbeat.h).
#include "wire/step_heartbeat.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "common/env_registry.h"
#include "wire/client_conn.h"
#include "wire/frame_io.h"

namespace ds {

std::string EncodeStepBeat(const StepBeat& beat) {
  Bytes b = PayloadWriter().I64(beat.rank).I64(beat.step).Take();
  PayloadWriter w;
  w.I64(beat.compute_micros).I64(beat.samples);
  if (beat.save_stall_micros >= 0 || beat.HasMetric()) w.I64(beat.save_stall_micros);
  if (beat.HasMetric()) w.I64(std::bit_cast<int64_t>(beat.loss)).I64(std::bit_cast<int64_t>(beat.accuracy));
  Bytes cost = w.Take();
  return std::string(b.begin(), b.end()) + beat.token + std::string(cost.begin(), cost.end());
}

std::optional<StepBeat> DecodeStepBeat(const uint8_t* data, size_t size) {
  if (size != kStepBeatSize && size != kStepBeatLongSize && size != kStepBeatSaveSize && size != kStepBeatMetricSize)
    return std::nullopt;
  Bytes b(data, data + 16);
  PayloadReader r(b);
  StepBeat beat;
  beat.rank = r.I64();
  beat.step = r.I64();
  beat.token.assign(reinterpret_cast<const char*>(data) + 16, kStepBeatTokenChars);
  if (size >= kStepBeatLongSize) {
    Bytes c(data + kStepBeatSize, data + size);
    PayloadReader cr(c);
    beat.compute_micros = std::max<int64_t>(-1, cr.I64());
    beat.samples = std::max<int64_t>(-1, cr.I64());
    if (size >= kStepBeatSaveSize) beat.save_stall_micros = std::max<int64_t>(-1, cr.I64());
    if (size == kStepBeatMetricSize) {
      auto finite = [](double v) { return std::isfinite(v) ? v : StepBeat::kNoMetric; };
      beat.loss = finite(std::bit_cast<double>(cr.I64()));
      beat.accuracy = finite(std::bit_cast<double>(cr.I64()));
    }
  }
  return beat;
}

namespace {

class NoopHeartbeat final : public StepHeartbeat {
 public:
  void Beat(int64_t, const StepCost&) override {}
};

class UdpHeartbeat final : public StepHeartbeat {
 public:
  UdpHeartbeat(UniqueFd fd, int64_t rank, std::string token)
      : fd_(std::move(fd)), rank_(rank), token_(std::move(token)) {}
  void Beat(int64_t step, const StepCost& cost) override {
    const int64_t micros = cost.compute_seconds < 0 ? -1 : static_cast<int64_t>(cost.compute_seconds * 1e6);
    const int64_t stall = cost.save_stall_seconds < 0 ? -1 : static_cast<int64_t>(cost.save_stall_seconds * 1e6);
    std::string b = EncodeStepBeat(
        {rank_, step, token_, micros, cost.samples < 0 ? -1 : cost.samples, stall, cost.loss, cost.accuracy});
    (void)::send(fd_.get(), b.data(), b.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }

 private:
  UniqueFd fd_;
  int64_t rank_;
  std::string token_;
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
  return std::make_unique<UdpHeartbeat>(std::move(fd), EnvInt("RANK"), EnvString("DSLAUNCH_HEARTBEAT_TOKEN"));
}

}  // namespace ds
