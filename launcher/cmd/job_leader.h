// The run's leadership of its job in etcd (the job file's coordinator:
// etcd: [...], a site's etcd): the coordinator campaigns before the job
// starts and, leading, writes the job's state (JobState's text) at every
// transition through a LeaderSession (launcher/failover/leader_session.h)
// off the io thread. Without coordinator: nothing here runs and nothing
// needs etcd.
//
// Every frame to an agent then carries the leader's fencing token
// (wire_format.md "Fencing"), and the agents keep their workers for
// coordinator.grace when the coordinator is lost, so that `dslaunch
// --resume JOB` (job_takeover.h) can take the job over from its state
// here. What it does not do yet: start the job's own etcd (coordinator:
// replicas: is refused with the plan) or standby coordinators.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/config/job_spec.h"
#include "launcher/coordinator/job_state.h"
#include "launcher/failover/leader_session.h"

namespace ds {

// The keys of a job: <prefix><job_id>/leader and /state.
std::string JobKey(const CoordinatorSpec& spec, const std::string& job_id, const char* leaf);

// The session's options for `job` (its coordinator: section, its
// heartbeat_timeout as the lease's TTL), the coordinator at `identity`.
failover::LeaderSessionOptions LeaderOptions(const JobSpec& job, const std::string& job_id,
                                             const std::string& identity);

// Leads the job in etcd: null without coordinator.etcd; else the session,
// or LeaderSession::Start's error (naming the key and the endpoints).
Result<std::unique_ptr<failover::LeaderSession>> LeadJob(const JobSpec& job, const std::string& job_id,
                                                        const std::string& identity);
// LeadJob for a coordinator taking over: while another leads (the lost
// one's lease has not run out yet) or etcd does not answer (said once),
// tries again until `wait_s` passed.
Result<std::unique_ptr<failover::LeaderSession>> LeadJobWhenFree(const JobSpec& job, const std::string& job_id,
                                                                const std::string& identity, double wait_s);
// A standby's campaign once its wait saw the key vacant: LeadJob; when
// another standby won instead, it waits for the key to be vacant again
// (another loss) and campaigns again; etcd not answering (said once) is
// tried again every 500 ms. Null when the job ended meanwhile (under the
// other leader; `ended` says so): nothing to take over. A standby that
// gave up here would take its etcd member with it
// (coordinator.replicas).
Result<std::unique_ptr<failover::LeaderSession>> LeadJobAsStandby(const JobSpec& job, const std::string& job_id,
                                                                 const std::string& identity,
                                                                 const std::function<bool()>& ended);

// A standby's "is the job over for me" (WaitForVacancy's `ended`): the
// job's state says done, or its etcd has not answered for `silence_s` (the
// job's own etcd lost a majority of its members: no takeover can follow).
// Reads etcd once a second at most; a member's own "done" is enough (the
// first that answers is read first, then the quorum).
class JobOver {
 public:
  JobOver(const JobSpec& job, std::string job_id, double silence_s);
  bool operator()();

 private:
  const JobSpec& job_;
  std::string job_id_;
  double silence_s_;
  std::chrono::steady_clock::time_point last_look_{}, last_answer_;
};
// A standby's wait (--standby): true once the job's leader key is vacant
// (its leader lost, or resigned), false as soon as `ended()` says the job
// is over (looked at every second). It watches the key, and reads it after
// every 3 quiet seconds (a watch on a member cut off from the others hears
// nothing); an etcd that does not answer is tried again every 500 ms (said
// once).
Result<bool> WaitForVacancy(const JobSpec& job, const std::string& job_id, const std::function<bool()>& ended);
// The job's state as its leader last wrote it. NotFound when none was.
// `serializable`: from the first member that answers, quorum or not.
Result<JobState> ReadJobState(const JobSpec& job, const std::string& job_id, bool serializable = false);
// ReadJobState for the coordinator that has just won the job: etcd not
// answering (Unavailable, Timeout) is tried again until `wait_s` passed.
Result<JobState> ReadJobStateWithin(const JobSpec& job, const std::string& job_id, double wait_s);

}  // namespace ds
