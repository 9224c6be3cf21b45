// The name a worker gives the thread that trains (pthread_setname_np), so
// that a hang report shows where training is rather than a main thread
// waiting for it: dstrain trains each generation on a thread of its own
// (runtime/reshape/worker_reshape.cc) and names it so; the agent's stack dumps
// carry thread names (agent/stacks/stack_dump.cc) and the hang report prefers the
// thread of this name, else the main one (launcher/coordinator/hang_report.h).
#pragma once

namespace ds {

inline constexpr char kTrainingThreadName[] = "ds-train";  // at most 15 characters (the kernel's limit)

}  // namespace ds
