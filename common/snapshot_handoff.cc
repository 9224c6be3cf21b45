#include "common/snapshot_handoff.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {
namespace {
std::optional<uint64_t> Digits(const std::string& s, int base) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char c : s)
    if (!(c >= '0' && c <= '9') && !(base == 16 && c >= 'a' && c <= 'f')) return std::nullopt;
  return std::stoull(s, nullptr, base);
}
}  // namespace

std::string HandoffName(const Handoff& h, const char* suffix) {
  return fmt::format("{:08d}.{}.{}.{:08x}.{}", h.step, h.rank, h.world, h.crc32, suffix);
}

std::optional<Handoff> ParseHandoffManifest(const std::string& name) {
  const std::vector<std::string> f = Split(name, '.');
  if (f.size() != 5 || f[4] != kHandoffManifest || f[3].size() != 8) return std::nullopt;
  auto step = Digits(f[0], 10), rank = Digits(f[1], 10), world = Digits(f[2], 10), crc = Digits(f[3], 16);
  if (!step || !rank || !world || !crc || *world == 0 || *world > (1u << 24) || *rank >= *world) return std::nullopt;
  return Handoff{static_cast<int64_t>(*step), static_cast<uint32_t>(*rank), static_cast<uint32_t>(*world),
                 static_cast<uint32_t>(*crc)};
}

}  // namespace ds
