// The one place the timing defaults shared by the launcher, the coordinator,
// the agent and the DSLAUNCH_* registry are written. Every options struct
// initialises its field from these, and env_registry.cc prints them as the
// variables' defaults, so `dslaunch env` and the structs cannot drift.
// Seconds, as the job file and the command line write them.
#pragma once

namespace ds {

inline constexpr double kDefaultHeartbeatInterval = 1.0;  // between Pings, both ways
inline constexpr double kDefaultHeartbeatTimeout = 5.0;   // a peer silent this long is lost
inline constexpr double kDefaultStopGrace = 1.0;          // SIGTERM -> SIGKILL (DSLAUNCH_STOP_GRACE)
inline constexpr double kDefaultConnectTimeout = 10.0;    // SSH / coordinator connect (DSLAUNCH_CONNECT_TIMEOUT)
inline constexpr double kDefaultHangTimeout = 0.0;        // a stalled step heartbeat; 0 = off
// Stragglers (launcher/coordinator/straggler.h): a node whose ranks stay above
// kDefaultSlowFactor x their peers' median for kDefaultSlowWindow seconds is reported.
inline constexpr double kDefaultSlowFactor = 1.5;
inline constexpr double kDefaultSlowWindow = 2.0;
// Slow links (launcher/coordinator/slow_link.h): a node whose heartbeat round
// trip stays above kDefaultSlowLinkFactor x the other nodes' median, and
// kDefaultSlowLinkFloor seconds above it, is reported.
inline constexpr double kDefaultSlowLinkFactor = 4.0;
inline constexpr double kDefaultSlowLinkFloor = 0.005;
// Every agent must register within connect timeout + this (the coordinator's
// register deadline); until then an agent retries a coordinator that resets,
// refuses or does not answer its connection (thousands arriving at once).
inline constexpr double kRegisterGrace = 20.0;

}  // namespace ds
