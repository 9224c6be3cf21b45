#include "wire/snapshot_handoff.h"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "common/check.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {
std::optional<uint64_t> Digits(const std::string& s, int base) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char c : s)
    if (!(c >= '0' && c <= '9') && !(base == 16 && c >= 'a' && c <= 'f')) return std::nullopt;
  return std::stoull(s, nullptr, base);
}
bool IsHex(const std::string& s, size_t min, size_t max) {
  if (s.size() < min || s.size() > max) return false;
  for (char c : s)
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'f')) return false;
  return true;
}
constexpr uint32_t kMaxWorld = 1u << 24;
}  // namespace

std::string HandoffName(const Handoff& h, const char* suffix) {
  return fmt::format("{:08d}.{}.{}.{}.{}.{}.{:08x}.{}", h.step, h.rank, h.id.world, h.id.zero_stage, h.id.config,
                     h.id.run, h.crc32, suffix);
}

std::optional<Handoff> ParseHandoffManifest(const std::string& name) {
  const std::vector<std::string> f = Split(name, '.');
  if (f.size() != 8 || f[7] != kHandoffManifest || f[6].size() != 8) return std::nullopt;
  auto step = Digits(f[0], 10), rank = Digits(f[1], 10), world = Digits(f[2], 10), stage = Digits(f[3], 10),
       crc = Digits(f[6], 16);
  if (!step || !rank || !world || !stage || !crc || *world > kMaxWorld || *stage > 3) return std::nullopt;
  Handoff h;
  h.step = static_cast<int64_t>(*step);
  h.rank = static_cast<uint32_t>(*rank);
  h.crc32 = static_cast<uint32_t>(*crc);
  h.id = msg::SnapshotId{f[5], static_cast<uint32_t>(*world), static_cast<uint8_t>(*stage), f[4], ""};
  if (h.rank >= h.id.world || !SnapshotIdProblem(h.id, /*set_required=*/false).empty()) return std::nullopt;
  return h;
}

std::string ManifestDigest(const std::string& manifest) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  DS_CHECK(EVP_Digest(manifest.data(), manifest.size(), md, &len, EVP_sha256(), nullptr) == 1 && len >= 8);
  return HexEncode(Bytes(md, md + 8));
}

bool IsSetDigest(const std::string& s) { return IsHex(s, 16, 16); }
bool IsRunId(const std::string& s) { return IsHex(s, 1, 32); }

std::string SnapshotIdProblem(const msg::SnapshotId& id, bool set_required) {
  if (!IsRunId(id.run)) return "run id '" + Printable(id.run) + "' is not 1 to 32 hex digits";
  if (!IsHex(id.config, 1, 16)) return "config hash '" + Printable(id.config) + "' is not 1 to 16 hex digits";
  if (id.world == 0 || id.world > kMaxWorld) return fmt::format("world size {} is not 1..{}", id.world, kMaxWorld);
  if (id.zero_stage > 3) return fmt::format("ZeRO stage {} is not 0..3", id.zero_stage);
  if ((set_required || !id.set.empty()) && !IsSetDigest(id.set))
    return "set '" + Printable(id.set) + "' is not a manifest digest (16 hex digits)";
  return "";
}

std::string SnapshotStepDirName(int64_t step, const std::string& set) {
  return fmt::format("step_{:08d}.{}", step, set);
}

}  // namespace ds
