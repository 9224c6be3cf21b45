#include "launcher/failover/leader_session.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/log.h"

namespace ds::failover {
namespace {

// After an etcd error (unreachable, no leader): the next try.
constexpr auto kRetry = std::chrono::milliseconds(500);

}  // namespace

Result<std::unique_ptr<LeaderSession>> LeaderSession::Start(LeaderSessionOptions o, const Clock& clock) {
  DS_ASSIGN_OR_RETURN(std::unique_ptr<etcd::Client> client, etcd::Client::Create(o.client));
  std::unique_ptr<LeaderSession> s(new LeaderSession(std::move(o), clock, std::move(client)));
  Result<CampaignResult> c = s->election_.Campaign();
  if (!c.ok()) {
    return Status::Unavailable(
        fmt::format("coordinator.etcd: cannot campaign for {}: {}", s->options_.leader_key, c.status().message()));
  }
  if (!c->leads) {
    return Status::Aborted(fmt::format("coordinator.etcd: {} is held by {} (fencing token {}): another "
                                             "coordinator leads this job",
                                             s->options_.leader_key, c->holder, c->token));
  }
  s->leads_ = true;
  s->token_ = c->token;
  s->elections_ = 1;
  s->thread_ = std::thread([p = s.get()] { p->Loop(); });
  return s;
}

LeaderSession::LeaderSession(LeaderSessionOptions o, const Clock& clock, std::unique_ptr<etcd::Client> client)
    : options_(std::move(o)),
      clock_(clock),
      client_(std::move(client)),
      election_(*client_, clock_, ElectionOptions{options_.leader_key, options_.identity, options_.ttl_s}),
      store_(*client_, options_.state_key, options_.leader_key) {}

LeaderSession::~LeaderSession() { Stop(); }

void LeaderSession::Offer(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  newest_ = std::move(text);
  ++offered_;
  cv_.notify_all();
}

Status LeaderSession::Flush(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t want = offered_;
  if (cv_.wait_for(lock, Seconds(timeout_s), [&] { return written_ >= want; })) return Status::OK();
  return Status::Timeout(fmt::format("the job's state was not written to {} within {} s{}", options_.state_key,
                                     timeout_s, last_error_.empty() ? "" : ": " + last_error_));
}

void LeaderSession::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::string LeaderSession::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void LeaderSession::Loop() {
  const auto renew_every = Seconds(static_cast<double>(options_.ttl_s) / 3);
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point renew_at = clock_.Now() + renew_every;
  while (!(stopping_ && !leads_)) {
    if (!leads_) {
      CampaignAgain(lock);
      renew_at = clock_.Now() + renew_every;
      continue;
    }
    if (!stopping_ && written_ >= offered_)
      cv_.wait_for(lock, std::max(renew_at - clock_.Now(), Clock::duration::zero()),
                   [&] { return stopping_ || written_ < offered_; });
    if (clock_.Now() >= renew_at) {
      lock.unlock();
      const Status st = election_.Renew();
      lock.lock();
      renew_at = clock_.Now() + renew_every;
      if (!st.ok() && !election_.Leads()) {  // stepped down: the election said why
        leads_ = false;
        last_error_ = st.message();
        continue;
      }
      if (!st.ok()) last_error_ = st.message();  // still leading until the lease's deadline
    }
    if (written_ < offered_) WritePending(lock);
    if (stopping_) break;
  }
  const bool resign = leads_.exchange(false);
  lock.unlock();
  if (resign) (void)election_.Resign();
}

void LeaderSession::WritePending(std::unique_lock<std::mutex>& lock) {
  const std::string text = newest_;
  const uint64_t number = offered_;
  const int64_t token = token_;
  lock.unlock();
  Result<int64_t> r = store_.Write(text, token);
  lock.lock();
  if (r.ok()) {
    written_ = std::max(written_, number);
    revision_ = *r;
    ++writes_;
    cv_.notify_all();
    return;
  }
  if (r.status().code() == Status::Code::kAborted) {
    // Refused under this token: the election looks at the key itself
    // (Renew), and steps down when it is gone or another's.
    lock.unlock();
    (void)election_.Renew();
    lock.lock();
    if (!election_.Leads()) {
      leads_ = false;
      last_error_ = r.status().message();
      DS_LOG(Warn, Coord) << "the job's state was not written: " << last_error_;
      return;
    }
  }
  Failed(lock, r.status());
}

void LeaderSession::CampaignAgain(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  Result<CampaignResult> c = election_.Campaign();
  if (c.ok() && !c->leads) {
    // Another leads (a standby, or our own old key until its lease ends):
    // wait for the key to go, then try again.
    const Status st = election_.WaitForVacancy(*c, static_cast<double>(options_.ttl_s));
    lock.lock();
    if (!st.ok() && st.code() != Status::Code::kTimeout) Failed(lock, st);
    return;
  }
  lock.lock();
  if (!c.ok()) return Failed(lock, c.status());
  leads_ = true;
  token_ = c->token;
  ++elections_;
  // Leading again, under a new token: the newest state is written again.
  // (Nothing else writes this job's state yet: a standby that led in
  // between would be read first here.)
  if (offered_ > 0) written_ = 0;
  DS_LOG(Warn, Coord) << options_.identity << " leads again (fencing token " << c->token << ")";
}

void LeaderSession::Failed(std::unique_lock<std::mutex>& lock, const Status& st) {
  last_error_ = st.message();
  DS_LOG(Debug, Coord) << "etcd: " << last_error_ << "; trying again";
  cv_.wait_for(lock, kRetry, [&] { return stopping_; });
}

}  // namespace ds::failover
