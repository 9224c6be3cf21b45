#include "runtime/engine.h"

namespace ds::rt {

// Mixed-precision Adam (b = 2, K = 12: fp32 master + m + v) gives 16Ψ,
// 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, 16Ψ/N. In fp32 the parameters are their own master
// copy: b = 4, K = 4 * slots.
double ZeroMemoryFormula(int stage, bool half, int state_slots, double psi, int n) {
  const double b = half ? 2 : 4;
  const double k = 4.0 * state_slots + (half ? 4 : 0);
  switch (stage) {
    case 0: return (2 * b + k) * psi;
    case 1: return 2 * b * psi + k * psi / n;
    case 2: return b * psi + (b + k) * psi / n;
    default: return (2 * b + k) * psi / n;
  }
}

}  // namespace ds::rt
