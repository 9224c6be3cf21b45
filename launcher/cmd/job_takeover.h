// Taking a job over when its dslaunch was lost (coordinator failover, the
// job file's coordinator: etcd:): `dslaunch --resume JOB` with the same
// command line, on the same host as the same user, becomes the job's
// coordinator while the agents keep their workers (coordinator.grace).
//
// What it needs beyond the job's state in etcd is what never leaves this
// host: the job secret and the address the agents dial. A leading run
// keeps them in its takeover record, <private dir>/<job>.takeover (0600,
// this user's private directory, common/private_dir.h), and removes it when
// the job ends. The agents' tokens are derived from the secret per node
// (FailoverAgentToken), so the new coordinator knows the key each agent
// already holds without any agent being told anything.
#pragma once

#include <string>

#include "common/status.h"
#include "launcher/coordinator/coordinator.h"

namespace ds {

struct TakeoverRecord {
  std::string secret;   // the job secret
  std::string address;  // host:port: where the agents reach the coordinator
};

// InvalidArgument unless `job_id` is 1-64 of [0-9A-Za-z_-] (it names a file).
Status CheckJobId(const std::string& job_id);
Status WriteTakeoverRecord(const std::string& job_id, const TakeoverRecord& r);
// NotFound names the file and says what it means: this host and user did
// not run the job, or it ended.
Result<TakeoverRecord> ReadTakeoverRecord(const std::string& job_id);
void RemoveTakeoverRecord(const std::string& job_id);

// Listens on the lost coordinator's address (the agents dial it), which
// its dying process may hold for a moment more: tried for up to 2 s.
Status ListenWhereTheLostOneDid(Coordinator& coord);

// Node `node`'s agent token in a job with coordinator failover.
std::string FailoverAgentToken(const std::string& secret, const std::string& job_id, int node);

}  // namespace ds
