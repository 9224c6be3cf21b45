#include "wire/hmac_auth.h"

#include <sys/random.h>

#include <cerrno>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/check.h"

namespace ds {

// The kernel's CSPRNG (getrandom): no user-space generator to seed, so the
// first call in a process (an agent's first worker token) costs a syscall,
// not OpenSSL's DRBG initialisation.
Bytes RandomBytes(size_t n) {
  Bytes b(n);
  for (size_t got = 0; got < n;) {
    ssize_t r = ::getrandom(b.data() + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    DS_CHECK(r > 0);
    got += static_cast<size_t>(r);
  }
  return b;
}

std::string HexEncode(const Bytes& b) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t c : b) {
    s.push_back(kDigits[c >> 4]);
    s.push_back(kDigits[c & 15]);
  }
  return s;
}

std::string RandomHex(size_t n) { return HexEncode(RandomBytes(n)); }

Bytes HmacSha256(const std::string& key, const Bytes& data) {
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  DS_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
                out.data(), &len) != nullptr);
  out.resize(len);
  return out;
}

Bytes ClientProof(const std::string& key, const Bytes& nonce) { return HmacSha256(key, nonce); }

Bytes ServerProof(const std::string& key, const Bytes& nonce) {
  Bytes data = {'s', 'e', 'r', 'v', 'e', 'r'};
  data.insert(data.end(), nonce.begin(), nonce.end());
  return HmacSha256(key, data);
}

bool MacEquals(const Bytes& a, const Bytes& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string StoreToken(const std::string& secret, const std::string& job_id, int generation) {
  std::string msg = job_id + "/" + std::to_string(generation);
  return HexEncode(HmacSha256(secret, Bytes(msg.begin(), msg.end())));
}

std::string AttachKey(const std::string& key) {
  static const std::string kLabel = "dslaunch attach";
  return HexEncode(HmacSha256(key, Bytes(kLabel.begin(), kLabel.end())));
}

}  // namespace ds
