// libFuzzer target: the wire protocol's decoders (wire/frame_io.h,
// wire/protocol.h). Input: a byte stream cut into frames exactly as a
// reader would (header validated before the payload is taken); every payload
// is also decoded as every message type. Must never crash, over-read or
// allocate from a lying length (ASan).
#include <cstddef>
#include <cstdint>

#include "wire/frame_io.h"
#include "wire/protocol.h"

namespace {

template <typename M>
void Try(const ds::Bytes& payload) {
  auto m = M::Decode(payload);
  if (m.ok()) {
    ds::Bytes again = m->Encode();  // round trip must re-decode
    if (!M::Decode(again).ok()) __builtin_trap();
  }
}

void DecodeAll(const ds::Bytes& p) {
  using namespace ds::msg;
  Try<Hello>(p); Try<Challenge>(p); Try<Auth>(p); Try<AuthOk>(p); Try<Error>(p);
  Try<Register>(p); Try<Reserve>(p); Try<Reserved>(p); Try<Assign>(p);
  Try<WorkerStarted>(p); Try<Output>(p); Try<WorkerExited>(p); Try<Stop>(p);
  Try<Stopped>(p); Try<Ping>(p); Try<Shutdown>(p); Try<StoreSet>(p); Try<StoreGet>(p);
  Try<StoreAdd>(p); Try<StoreWait>(p); Try<StoreOk>(p); Try<StoreValue>(p); Try<StoreInt>(p);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DecodeAll(ds::Bytes(data, data + size));  // as a bare payload
  size_t pos = 0;
  while (size - pos >= ds::wire::kHeaderSize) {  // as a stream of frames
    auto h = ds::DecodeHeader(data + pos);
    if (!h.ok()) break;
    pos += ds::wire::kHeaderSize;
    if (size - pos < h->length) break;  // truncated
    DecodeAll(ds::Bytes(data + pos, data + pos + h->length));
    pos += h->length;
  }
  return 0;
}
