#include "launcher/failover/leader_session.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/log.h"

namespace ds::failover {
namespace {

// After an etcd error (unreachable, no leader): the next try.
constexpr auto kRetry = std::chrono::milliseconds(500);
// How often a leading session adds the endpoints of members that joined
// (a replacement, cmd/member_keeper.h): a few seconds after one joined.
constexpr auto kLearnEvery = std::chrono::seconds(5);

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
  // The state as this leader found it: a later write by anyone else means
  // another coordinator led the job in between (LedMeanwhile).
  Result<std::optional<StoredState>> stored = s->store_.Read();
  if (!stored.ok()) {
    (void)s->election_.Resign();
    return Status::Unavailable(fmt::format("coordinator.etcd: cannot read {}: {}", s->options_.state_key,
                                           stored.status().message()));
  }
  if (stored->has_value()) s->known_revision_ = (*stored)->revision;
  s->leads_ = true;
  s->token_ = c->token;
  s->elections_ = 1;
  s->Publish();
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

bool LeaderSession::Leads() const {
  return leads_.load() && clock_.Now().time_since_epoch().count() < deadline_.load();
}

void LeaderSession::Publish() {
  deadline_ = election_.deadline().time_since_epoch().count();
  confirmed_ = election_.confirmed().time_since_epoch().count();
}

void LeaderSession::OnDeposed(std::function<void(const std::string&)> cb) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!deposed_) {
    on_deposed_ = std::move(cb);
    return;
  }
  const std::string why = last_error_;  // deposed already: said now, on the caller's thread
  lock.unlock();
  cb(why);
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
  while (!(stopping_ && !leads_) && !deposed_) {
    if (!leads_) {
      if (lost_at_ == Clock::time_point{}) lost_at_ = clock_.Now();
      if (options_.give_up_s > 0 && clock_.Now() - lost_at_ > Seconds(options_.give_up_s)) {
        Depose(lock, fmt::format("it has not led for {:.0f} s (etcd unreachable: {}), and its agents have stopped "
                                 "waiting for it", options_.give_up_s, last_error_));
        break;
      }
      CampaignAgain(lock);
      renew_at = clock_.Now() + renew_every;
      continue;
    }
    if (!stopping_ && written_ >= offered_)
      cv_.wait_for(lock, std::max(renew_at - clock_.Now(), Clock::duration::zero()),
                   [&] { return stopping_ || written_ < offered_; });
    if (clock_.Now() >= renew_at) {
      // The next one is due a third of the TTL after this one began, not
      // after its answer: a slow etcd must not stretch the period to where
      // the lease's deadline passes between two renewals.
      renew_at = clock_.Now() + renew_every;
      lock.unlock();
      const Status st = election_.Renew();
      lock.lock();
      Publish();
      if (!st.ok() && !election_.Leads()) {  // stepped down: the election said why
        leads_ = false;
        last_error_ = st.message();
        continue;
      }
      if (!st.ok()) last_error_ = st.message();  // still leading until the lease's deadline
      if (st.ok() && clock_.Now() >= learn_at_) {  // members replaced since: reachable through them too
        learn_at_ = clock_.Now() + kLearnEvery;
        lock.unlock();
        (void)client_->LearnEndpoints();
        lock.lock();
      }
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
    known_revision_ = std::max(known_revision_, *r);
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
    Publish();
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
  lock.lock();
  if (c.ok() && !c->leads && c->holder != options_.identity && c->token > token_)
    return Depose(lock, fmt::format("{} leads it now (fencing token {})", c->holder, c->token));
  if (c.ok() && !c->leads) {
    // Our own old key until its lease ends (or one gone again in between):
    // wait for the key to go, then try again.
    lock.unlock();
    const Status st = election_.WaitForVacancy(*c, static_cast<double>(options_.ttl_s));
    lock.lock();
    if (!st.ok() && st.code() != Status::Code::kTimeout) Failed(lock, st);
    return;
  }
  if (!c.ok()) return Failed(lock, c.status());
  if (LedMeanwhile(lock)) return;
  leads_ = true;
  lost_at_ = {};
  token_ = c->token;
  ++elections_;
  Publish();
  // Leading again, under a new token, and nobody led in between: the
  // newest state is written again.
  if (offered_ > 0) written_ = 0;
  DS_LOG(Warn, Coord) << options_.identity << " leads again (fencing token " << c->token << ")";
}

bool LeaderSession::LedMeanwhile(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  Result<std::optional<StoredState>> stored = store_.Read();
  lock.lock();
  const bool other = stored.ok() && stored->has_value() && (*stored)->revision > known_revision_ &&
                     (*stored)->text != newest_;  // not our own write whose answer was lost
  if (stored.ok() && !other) return false;
  lock.unlock();
  (void)election_.Resign();
  lock.lock();
  if (!stored.ok()) {
    Failed(lock, stored.status());
    return true;
  }
  Depose(lock, fmt::format("another coordinator led it meanwhile (it wrote the job's state at revision {})",
                           (*stored)->revision));
  return true;
}

void LeaderSession::Depose(std::unique_lock<std::mutex>& lock, const std::string& why) {
  deposed_ = true;
  leads_ = false;
  last_error_ = why;
  DS_LOG(Warn, Coord) << options_.identity << " is deposed as leader of " << options_.leader_key << ": " << why;
  auto cb = on_deposed_;
  cv_.notify_all();
  lock.unlock();
  if (cb) cb(why);
  lock.lock();
}

void LeaderSession::Failed(std::unique_lock<std::mutex>& lock, const Status& st) {
  last_error_ = st.message();
  DS_LOG(Debug, Coord) << "etcd: " << last_error_ << "; trying again";
  cv_.wait_for(lock, kRetry, [&] { return stopping_; });
}

}  // namespace ds::failover
