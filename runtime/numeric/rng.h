// Rng: a small deterministic PRNG (xoshiro256**, seeded through splitmix64)
// used for parameter init, data shuffling and synthetic data. Its whole state
// is four 64-bit words: state() / Rng(state) save and restore it exactly
// (checkpoints). Value type; not thread-safe to share.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace ds::rt {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 0) {
    uint64_t x = seed;
    for (auto& w : s_) w = SplitMix64(x);
  }
  explicit Rng(const State& state) : s_(state) {}

  const State& state() const { return s_; }

  // Next 64 random bits.
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

  // Uniform integer in [0, n), n > 0, without modulo bias (rejection).
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = Next(); while (r >= limit);
    return r % n;
  }

  // Standard normal (Box-Muller, one value per call).
  double Normal() {
    double u1 = Uniform();
    while (u1 <= 0) u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  static uint64_t SplitMix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
};

}  // namespace ds::rt
