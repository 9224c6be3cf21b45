// HMAC-SHA256 challenge-response (OpenSSL) for the handshake described in
// wire_format.md, random secrets/nonces, and the per-generation store token.
// Pure functions, thread-safe.
#pragma once

#include <string>

#include "wire/frame_io.h"

namespace ds {

// `n` cryptographically random bytes (RAND_bytes); aborts only if OpenSSL's
// generator is broken.
Bytes RandomBytes(size_t n);
// 2n lowercase hex characters of random data (job secrets, job ids).
std::string RandomHex(size_t n);
std::string HexEncode(const Bytes& b);

// HMAC-SHA256(key, data).
Bytes HmacSha256(const std::string& key, const Bytes& data);

// The client's answer to a challenge, and the server's proof in AuthOk.
Bytes ClientProof(const std::string& key, const Bytes& nonce);
Bytes ServerProof(const std::string& key, const Bytes& nonce);
// Constant-time comparison of a received MAC with the expected one.
bool MacEquals(const Bytes& a, const Bytes& b);

// The store credential of one generation: hex(HMAC(secret, job_id "/" gen)).
std::string StoreToken(const std::string& secret, const std::string& job_id, int generation);

// The attach credential made from `key` (an agent's token, or the job
// secret for the leader's own attach file): hex(HMAC(key, "dslaunch attach")).
// One-way: whoever holds it follows the job's output, nothing more.
std::string AttachKey(const std::string& key);

}  // namespace ds
