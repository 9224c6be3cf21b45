// The agent's side of the leader's fencing: with a replicated
// coordinator every command frame (Assign, Stop, Reshape, ...) carries the
// token of the leader that sent it, the create revision of the job's leader
// key in etcd (launcher/failover/leader_election.h), which only grows from
// one leader to the next. An agent admits a frame whose token is at least
// the newest it has seen and refuses an older one: a deposed leader (a
// partition healed, a replayed frame) commands nobody. Token 0 means "no
// fencing" (a job without `coordinator:`): admitted only while no token has
// been seen. Pure value type; not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace ds {

class FencingGuard {
 public:
  // OK, remembering `token` when it is the newest, when it is at least the
  // newest seen. Otherwise Aborted, naming the frame's sender, e.g.
  // "fencing: refused a frame from 10.0.0.1:4000 with token 5: a newer
  // leader's (token 7) was seen (a deposed leader)".
  Status Admit(uint64_t token, std::string_view from);
  // The newest token admitted; 0 when none.
  uint64_t newest() const { return newest_; }

 private:
  uint64_t newest_ = 0;
};

}  // namespace ds
