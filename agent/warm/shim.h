// The Python source a warm spare runs (`<interpreter> [flags] -c <source>
// FD FIRST MODULE...`): it imports MODULE... (sys.path[0] as for FIRST, the
// script or -m), reports "ready RSS_KIB SECONDS" or "failed WHY" on the
// socket FD, then waits there for its assignment (warm_spare.h has the
// format) and runs it as `python3 [flags] script.py|-m module args` would.
// Embedded rather than installed: the agent is the one file every node has,
// so the shim cannot be missing or of another version than the agent that
// speaks to it, and nothing on disk can be swapped under it.
#pragma once

namespace ds {

extern const char kWarmShim[];

}  // namespace ds
