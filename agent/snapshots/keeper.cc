#include "agent/snapshots/keeper.h"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/strings.h"
#include "wire/snapshot_handoff.h"

namespace ds {
namespace {
using SteadyClock = std::chrono::steady_clock;
uint64_t MicrosSince(SteadyClock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - t0).count());
}
constexpr double kTransferTimeout = 60.0;  // seconds per shard sent or fetched
// Securing saves (persisting and replicating) has a CPU budget (SnapshotBudget): on
// a node whose ranks keep every core busy each cycle the agent takes is a
// rank's. Over budget, the task waits until the budget allows (or the save
// is superseded): the coordinator picks the next save to secure only when
// this one is done, so what cannot keep up is the cadence of recoverable
// saves, skipped whole, never their existence.
double ThreadCpuSeconds() {
  timespec ts {};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
// This process's CPU time so far, every thread's, user and system.
uint64_t ProcessCpuMicros() {
  rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  auto us = [](const timeval& t) { return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec); };
  return us(ru.ru_utime) + us(ru.ru_stime);
}
}  // namespace

Result<std::unique_ptr<SnapshotKeeper>> SnapshotKeeper::Start(const Identity& me, const msg::SnapshotSetup& setup,
                                                              const std::string& memory_parent, SnapshotBudget budget) {
  std::unique_ptr<SnapshotKeeper> k(new SnapshotKeeper());
  k->me_ = me;
  k->budget_ = budget;
  k->peer_ = PeerIdentity{me.job_id, setup.peer_key, me.node, me.host, me.bind_addr};
  k->keep_ = std::max<int>(1, static_cast<int>(setup.keep));
  if (!IsRunId(setup.run_id))
    return Status::InvalidArgument("snapshots: run id '" + Printable(setup.run_id) + "' is not 1 to 32 hex digits");
  k->run_ = setup.run_id;
  k->started_ = SteadyClock::now();
  DS_ASSIGN_OR_RETURN(k->store_, SnapshotStore::Create(memory_parent));
  if (!setup.dir.empty()) k->disk_ = std::make_unique<SnapshotDisk>(setup.dir);
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  k->events_[0].Reset(p[0]);
  k->events_[1].Reset(p[1]);
  k->inotify_.Reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (k->inotify_.get() < 0 ||
      ::inotify_add_watch(k->inotify_.get(), k->store_->incoming_dir().c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
    return Status::IOError(fmt::format("inotify on {}: {}", k->store_->incoming_dir(), std::strerror(errno)));
  SnapshotKeeper* raw = k.get();
  DS_ASSIGN_OR_RETURN(k->server_, PeerServer::Start(me.bind_addr, k->peer_, raw, kTransferTimeout));
  k->thread_ = std::thread([raw] { raw->TaskLoop(); });
  if (k->disk_) {
    std::vector<msg::ShardEntry> found;
    size_t others = 0;
    for (const HeldShard& h : k->disk_->Scan()) {
      found.push_back(h.entry);
      if (h.entry.id.run != k->run_) ++others;
    }
    if (!found.empty())
      DS_LOG(Info, Ckpt) << "snapshots: " << found.size() << " shards on disk in " << setup.dir << " (" << others
                         << " of earlier runs: kept, never pruned by this run)";
    k->Report(std::move(found), {});
  }
  return k;
}

SnapshotKeeper::~SnapshotKeeper() {
  server_.reset();  // no more replicas arrive (and post tasks) from here on
  Drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SnapshotKeeper::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void SnapshotKeeper::TaskLoop() {
  LowerThreadPriority();
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      busy_ = true;
    }
    try {  // the thread's edge: an exception is this node's failure, reported, never std::terminate
      task();
    } catch (const std::exception& e) {
      Fail(fmt::format("a snapshot task stopped: {}", e.what()));
    } catch (...) {
      Fail("a snapshot task stopped: an unknown exception");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

void SnapshotKeeper::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;  // what is left only goes to disk: the peers are shutting down too
    tasks_.push_back([this] { PersistNewest(); });  // the newest shards reach the disk, secured or not
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
}

void SnapshotKeeper::Fail(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = what;
  }
  char c = 0;
  (void)!::write(events_[1].get(), &c, 1);
}

std::string SnapshotKeeper::failure() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void SnapshotKeeper::PushOutgoing(wire::MsgType type, Bytes payload) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    outgoing_.emplace_back(type, std::move(payload));
  }
  char c = 0;
  (void)!::write(events_[1].get(), &c, 1);  // a full pipe already wakes the loop
}

void SnapshotKeeper::Report(std::vector<msg::ShardEntry> added, std::vector<msg::ShardEntry> removed) {
  msg::SnapshotHeld m;
  m.added = std::move(added);
  m.removed = std::move(removed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.cpu_micros = ProcessCpuMicros();
    m.counters = counters_;
  }
  PushOutgoing(wire::MsgType::kSnapshotHeld, m.Encode());
}

void SnapshotKeeper::ReportHeld() {
  std::vector<msg::ShardEntry> held;
  for (const HeldShard& h : store_->Entries()) held.push_back(h.entry);
  if (disk_)
    for (const HeldShard& h : disk_->Entries()) held.push_back(h.entry);
  Report(std::move(held), {});
}

std::vector<std::pair<wire::MsgType, Bytes>> SnapshotKeeper::TakeOutgoing() {
  char buf[256];
  while (::read(events_[0].get(), buf, sizeof(buf)) > 0) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(outgoing_, {});
}

std::vector<msg::ShardEntry> SnapshotKeeper::PruneAll() {
  const msg::SnapshotPlan plan = this->plan();
  std::vector<msg::ShardEntry> gone = store_->Prune(keep_, run_, plan, me_.node);
  // Handed to the workers after the tasks queued now, which may still read them.
  if (!gone.empty()) Post([this] { store_->ReleaseSpares(); });
  if (disk_) {
    auto d = disk_->Prune(keep_, run_, plan);
    gone.insert(gone.end(), d.begin(), d.end());
  }
  return gone;
}

void SnapshotKeeper::OnInotify() {
  std::vector<std::string> names;
  alignas(inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = ::read(inotify_.get(), buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) {  // events were lost: look at what is there
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(store_->incoming_dir(), ec))
          names.push_back(e.path().filename().string());
      } else if (ev->len) {
        names.push_back(ev->name);
      }
    }
  }
  // Adopted and reported: what is persisted and replicated, and when, is the
  // coordinator's SnapshotPlan (SetPlan).
  for (const std::string& name : names) {
    if (!ParseHandoffManifest(name)) continue;  // the .shard, or a temporary name
    auto held = store_->Adopt(name, me_.node);
    if (!held.ok()) {
      if (held.status().code() != Status::Code::kNotFound)  // adopted already (listed twice)
        DS_LOG(Warn, Ckpt) << "snapshots: " << held.status().message();
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.handoffs;
      counters_.handoff_bytes += held->entry.bytes;
    }
    Report({held->entry}, PruneAll());
  }
}

void SnapshotKeeper::SetTargets(const msg::Replicate& m) {
  std::vector<std::string> nodes = m.peers;
  for (const msg::ReplicaPeer& t : m.targets) nodes.push_back(t.peer_addr);
  server_->AllowPeers(nodes);  // only the job's nodes are served
  std::lock_guard<std::mutex> lock(mu_);
  targets_ = m.targets;
}

void SnapshotKeeper::SetPlan(const msg::SnapshotPlan& m) {
  bool secure = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    secure = m.secure.step >= 0 && m.secure != plan_.secure;
    plan_ = m;
  }
  cv_.notify_all();  // a budget wait for a save no longer secured ends
  std::vector<msg::ShardEntry> gone;
  if (!m.drop.empty()) {
    auto dropped = [&](int64_t step, const msg::SnapshotId& id) {
      return id.run == run_ && std::find(m.drop.begin(), m.drop.end(), msg::SaveRef{step, id.set}) != m.drop.end();
    };
    gone = store_->DropIf(dropped);
    if (disk_) {
      auto d = disk_->DropIf(dropped);
      gone.insert(gone.end(), d.begin(), d.end());
    }
  }
  auto pruned = PruneAll();
  gone.insert(gone.end(), pruned.begin(), pruned.end());
  if (!gone.empty()) Report({}, std::move(gone));
  if (secure) Post([this, save = m.secure] { Secure(save); });
}

msg::SnapshotPlan SnapshotKeeper::plan() {
  std::lock_guard<std::mutex> lock(mu_);
  return plan_;
}

void SnapshotKeeper::Secure(const msg::SaveRef& save) {
  for (const HeldShard& h : store_->Entries()) {
    const msg::ShardEntry& e = h.entry;
    if (e.step != save.step || e.id.set != save.set || e.origin != me_.node || e.id.run != run_) continue;
    if (!WaitForBudget(save)) return;  // superseded, or the keeper stops
    auto file = store_->Open(e.step, e.id.set, e.shard);
    if (!file.ok()) continue;  // dropped meanwhile: the coordinator picks another save
    const double cpu0 = ThreadCpuSeconds();
    PersistAndSend(*file, /*replicate=*/true);
    background_cpu_ += ThreadCpuSeconds() - cpu0;
  }
}

bool SnapshotKeeper::WaitForBudget(const msg::SaveRef& save) {
  const auto t0 = SteadyClock::now();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const bool go_on = !stopping_ && !draining_ && fetches_owed_ == 0 && plan_.secure == save;
    const double elapsed = std::chrono::duration<double>(SteadyClock::now() - started_).count();
    const double over = background_cpu_ - (budget_.share * elapsed + budget_.burst);
    if (!go_on || over <= 0) {
      counters_.budget_wait_micros += MicrosSince(t0);
      return go_on;
    }
    cv_.wait_for(lock, std::chrono::duration<double>(over / budget_.share));
  }
}

void SnapshotKeeper::Persist(const msg::ShardEntry& e) {
  auto file = store_->Open(e.step, e.id.set, e.shard);
  if (file.ok()) PersistAndSend(*file, /*replicate=*/false);
}

void SnapshotKeeper::PersistNewest() {
  if (!disk_) return;
  std::map<uint32_t, msg::ShardEntry> newest;  // this node's own shards of this run, by shard
  for (const HeldShard& h : store_->Entries()) {
    const msg::ShardEntry& e = h.entry;
    if (e.origin != me_.node || e.id.run != run_) continue;
    auto it = newest.find(e.shard);
    if (it == newest.end() || it->second.step < e.step) newest[e.shard] = e;
  }
  for (const auto& [shard, e] : newest) {
    if (disk_->Has(e.step, e.id.set, e.shard)) continue;
    auto file = store_->Open(e.step, e.id.set, e.shard);
    if (file.ok()) PersistAndSend(*file, /*replicate=*/false);
  }
}

void SnapshotKeeper::PersistAndSend(const ShardFile& f, bool replicate) {
  const int64_t step = f.held.entry.step;
  const std::string& set = f.held.entry.id.set;
  const uint32_t shard = f.held.entry.shard;
  if (disk_ && !disk_->Has(step, set, shard)) {
    const auto t0 = SteadyClock::now();
    Status st = disk_->Persist(f);
    if (!st.ok()) {
      DS_LOG(Warn, Ckpt) << "snapshots: " << st.message();
    } else {
      msg::ShardEntry e = f.held.entry;
      e.tier = 2;
      {
        std::lock_guard<std::mutex> lock(mu_);
        counters_.persisted_bytes += e.bytes;
        counters_.persist_micros += MicrosSince(t0);
      }
      Report({e}, disk_->Prune(keep_, run_, plan()));
    }
  }
  std::vector<msg::ReplicaPeer> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!replicate || draining_) return;
    targets = targets_;
  }
  for (const msg::ReplicaPeer& t : targets) {
    if (sends_cancel_.cancelled()) break;  // a gather waits: the copies may go to a node that is gone
    const auto t0 = SteadyClock::now();
    Status st = SendShard(t.peer_addr, peer_, f, SteadyClock::now() + Seconds(kTransferTimeout), &sends_cancel_);
    if (!st.ok()) {
      DS_LOG(Warn, Ckpt) << "snapshots: " << st.message();
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    counters_.sent_bytes += f.held.entry.bytes;
    counters_.sent_micros += MicrosSince(t0);
  }
  if (!targets.empty()) Report({}, {});  // the coordinator's totals follow
}

Result<std::unique_ptr<ShardSink>> SnapshotKeeper::Receive(const HeldShard& held, const std::string& manifest) {
  return store_->Receive(held, manifest);
}

void SnapshotKeeper::Received(const HeldShard& held) {
  msg::ShardEntry e = held.entry;
  e.tier = 1;
  Report({e}, PruneAll());
  Post([this, e] { Persist(e); });
}

Result<ShardFile> SnapshotKeeper::Lookup(int64_t step, const std::string& set, uint32_t shard) {
  auto f = store_->Open(step, set, shard);
  if (f.ok() || !disk_) return f;
  return disk_->Open(step, set, shard);
}

void SnapshotKeeper::StartFetch(const msg::Fetch& m) {
  sends_cancel_.Cancel();  // a replica under way (or queued) to a lost node must not hold up the gather
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++fetches_owed_;       // nor a wait for the CPU budget
  }
  cv_.notify_all();
  Post([this, m] { Fetch(m); });
}

void SnapshotKeeper::Fetch(const msg::Fetch& m) {
  sends_cancel_.Reset();  // the replicas queued before the gather were dropped; later ones go
  {
    std::lock_guard<std::mutex> lock(mu_);
    --fetches_owed_;
  }
  const auto t0 = SteadyClock::now();
  // This run's saves that lost to m's: newer steps, and other saves of the
  // same step (a timeline a restart abandoned), but never one the plan
  // protects: a gather that failed (a source on a node not yet known dead)
  // and gave way to an older step must not cost the recovery point. Other
  // runs' saves stay on disk; in memory only the one being resumed stays.
  const std::vector<msg::SaveRef> kept = plan().protect;
  auto lost = [&](int64_t step, const msg::SnapshotId& id) {
    if (std::find(kept.begin(), kept.end(), msg::SaveRef{step, id.set}) != kept.end()) return false;
    return id.run == run_ && (step > m.step || (step == m.step && id != m.id));
  };
  std::vector<msg::ShardEntry> added, removed = store_->DropIf([&](int64_t step, const msg::SnapshotId& id) {
    return lost(step, id) || (id.run != run_ && id != m.id);
  });
  if (disk_) {
    auto d = disk_->DropIf(lost);
    removed.insert(removed.end(), d.begin(), d.end());
  }
  msg::Fetched done{m.generation, m.step, m.id.set, 0, 0, ""};
  for (const msg::ShardSource& src : m.sources) {
    if (store_->Has(m.step, m.id.set, src.shard)) continue;
    const bool local = disk_ && disk_->Has(m.step, m.id.set, src.shard);
    // Only that save's shard goes into memory: anything else is refused before a byte is written.
    auto into_store = [this, &m](const HeldShard& h, const std::string& manifest) -> Result<std::unique_ptr<ShardSink>> {
      if (h.entry.id != m.id)
        return Status::InvalidArgument(fmt::format("shard {} of step {}: of another save than the one asked for",
                                                   h.entry.shard, h.entry.step));
      return store_->Receive(h, manifest);
    };
    Result<HeldShard> got = local ? LoadFromDisk(m.step, m.id.set, src.shard)
                                  : FetchShard(src.peer_addr, peer_, m.step, m.id.set, src.shard, into_store,
                                               SteadyClock::now() + Seconds(kTransferTimeout));
    if (!got.ok()) {
      done.error = got.status().message();
      break;
    }
    if (!local) done.bytes += got->entry.bytes;
    msg::ShardEntry e = got->entry;
    e.tier = 1;
    added.push_back(e);
    if (!local) Post([this, e] { Persist(e); });
  }
  done.micros = static_cast<uint32_t>(std::min<uint64_t>(MicrosSince(t0), UINT32_MAX));
  Report(std::move(added), std::move(removed));
  PushOutgoing(wire::MsgType::kFetched, done.Encode());
  // A save being secured that the gather cut short is taken up again.
  if (const msg::SaveRef save = plan().secure; save.step >= 0) Post([this, save] { Secure(save); });
}

Result<HeldShard> SnapshotKeeper::LoadFromDisk(int64_t step, const std::string& set, uint32_t shard) {
  DS_ASSIGN_OR_RETURN(ShardFile file, disk_->Open(step, set, shard));
  DS_ASSIGN_OR_RETURN(ShardCopy copy, ReadVerified(file));
  DS_RETURN_IF_ERROR(store_->Put(copy));
  return copy.held;
}

}  // namespace ds
