#include "wire/hmac_auth.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

TEST_CASE("hmac: RFC 4231 test case 2", "[hmac]") {
  std::string data = "what do ya want for nothing?";
  CHECK(HexEncode(HmacSha256("Jefe", Bytes(data.begin(), data.end()))) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("hmac: proofs differ per key and direction", "[hmac]") {
  Bytes nonce = RandomBytes(32);
  CHECK(MacEquals(ClientProof("k", nonce), ClientProof("k", nonce)));
  CHECK(!MacEquals(ClientProof("k", nonce), ClientProof("k2", nonce)));
  CHECK(!MacEquals(ClientProof("k", nonce), ServerProof("k", nonce)));
  CHECK(!MacEquals(ClientProof("k", nonce), Bytes{}));
}

TEST_CASE("hmac: store tokens depend on job and generation", "[hmac]") {
  CHECK(StoreToken("s", "job", 0) == StoreToken("s", "job", 0));
  CHECK(StoreToken("s", "job", 0) != StoreToken("s", "job", 1));
  CHECK(StoreToken("s", "job", 0).size() == 64);
  CHECK(RandomHex(16).size() == 32);
  CHECK(RandomHex(16) != RandomHex(16));
}

}  // namespace
}  // namespace ds
