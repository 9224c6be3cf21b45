// The job's durable state in etcd, written only by the leader: one key
// holds one versioned document (the coordinator's JobState as JSON text,
// launcher/coordinator/job_state.h; opaque here), replaced whole at each
// transition, never per heartbeat. A write is a transaction "if the leader
// key's create revision is still my fencing token, put the state": a
// coordinator that lost its lease (the key deleted, or another's now) can
// no longer write, even if it has not noticed yet, so a standby that took
// over reads the newest state and nothing older lands after it. Blocking
// calls on the client's thread; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "launcher/failover/etcd_client.h"

namespace ds::failover {

struct StoredState {
  std::string text;
  int64_t revision = 0;  // the state key's mod revision: higher is newer
};

class StateStore {
 public:
  // `state_key` e.g. "/dslaunch/<job>/state"; `leader_key` the election's
  // (leader_election.h), whose create revision is the leader's token.
  StateStore(etcd::Client& client, std::string state_key, std::string leader_key);

  // Replaces the stored state with `text` when the leader key's create
  // revision is `token`; the write's revision. Error Aborted "not the
  // leader ..." (the stored state unchanged) when it is not; InvalidArgument
  // when `text` is larger than kMaxBytes; what the client says otherwise.
  Result<int64_t> Write(const std::string& text, int64_t token);
  // The stored state; nullopt when none was written yet.
  // `serializable`: from the first member that answers, quorum or not.
  Result<std::optional<StoredState>> Read(bool serializable = false);

  // etcd refuses a request over 1.5 MiB by default; a job's state is a few KiB.
  static constexpr size_t kMaxBytes = 1 << 20;

 private:
  etcd::Client& client_;
  std::string state_key_, leader_key_;
};

}  // namespace ds::failover
