// dstrain's exit codes: written by dstrain (runtime/main.cc), read by
// dslaunch's restart policy (launcher/coordinator/job_control_restart.cc)
// for jobs that run the built-in trainer, and listed in docs/usage.md. One
// place, so the two cannot drift.
#pragma once

namespace ds {

inline constexpr int kDstrainExitConfig = 1;  // bad config, data or checkpoint I/O
inline constexpr int kDstrainExitUsage = 2;   // bad command line or environment
inline constexpr int kDstrainExitComm = 3;    // a peer died or timed out: restartable
inline constexpr int kDstrainExitDevice = 4;  // this rank's GPU failed (CUDA, cuBLAS, a
                                              // kernel's fault): a restart on this host would
                                              // meet it again

}  // namespace ds
