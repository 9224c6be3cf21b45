// What the message codecs of wire/protocol.h share (wire/protocol.cc,
// wire/protocol_snapshot.cc): the Decode skeleton, which refuses a payload
// that does not match exactly. Internal to wire/.
#pragma once

#include "wire/protocol.h"

#define DS_DECODE_BEGIN(Name) \
  Result<Name> Name::Decode(const Bytes& payload) { \
    PayloadReader r(payload);                       \
    Name m;
#define DS_DECODE_END(Name)                          \
    DS_RETURN_IF_ERROR(r.Finish(#Name));            \
    return m;                                       \
  }
