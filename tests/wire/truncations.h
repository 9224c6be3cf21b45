// CheckTruncations(m): every prefix of m.Encode() and the encoding with one
// byte more must fail M::Decode (wire/protocol.h's contract). For the
// protocol tests; Catch2 CHECKs.
#pragma once

#include <catch2/catch.hpp>

#include "wire/protocol.h"

namespace ds::msg {

template <class M>
void CheckTruncations(const M& m) {
  const Bytes full = m.Encode();
  for (size_t n = 0; n < full.size(); ++n) CHECK_FALSE(M::Decode(Bytes(full.begin(), full.begin() + n)).ok());
  Bytes longer = full;
  longer.push_back(0);
  CHECK_FALSE(M::Decode(longer).ok());
}

}  // namespace ds::msg
