// JobControl's in-place recovery (job_control_reshape.cc), the agents played
// by the test on a fake clock: a crashed worker or a lost node reshapes the
// survivors (Reshape with their moves, an Assign only for a replacement,
// no Stop), a node evicted as slow leaving the same way (its workers moved
// to -1), the success line, the restart budget; and every fallback to the
// full restart with its one line: a worker that did not confirm, a node that
// did not answer, a save not gathered, a second failure meanwhile (one
// restart in the summary, the recovery's failure folded into its cause); and
// the switch's notice when the job cannot recover in place.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>

#include "launcher/report/job_summary.h"
#include "tests/launcher/coordinator/fake_cluster.h"
#include "wire/hmac_auth.h"

namespace ds::test {
namespace {

using wire::MsgType;

const char* kThreeHosts = "w0 slots=2\nw1 slots=2\nw2 slots=2\n";

JobSpec InPlaceJob() {
  JobSpec job;  // no command: dstrain
  job.elastic.max_restarts = 3;
  job.elastic.min_nodes = 1;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  job.elastic.in_place = true;
  job.checkpoint.dir = "/ckpt/{host}";
  return job;
}

msg::SnapshotId Id() { return msg::SnapshotId{"feed0001", 6, 0, "c0", "000000005e740012"}; }
msg::ShardEntry E(uint32_t shard, uint32_t origin) { return msg::ShardEntry{400, shard, Id(), origin, 1, 64}; }

// Generation 0 runs ranks 0..5 (w0: 0,1; w1: 2,3; w2: 4,5); each node holds
// its own shards of step 400 and a replica of the previous node's.
void RunWithSave(FakeCluster& c, bool saved = true) {
  c.RegisterAll();
  for (int n = 0; n < 3; ++n)
    c.Send(n, MsgType::kSnapshotReady, msg::SnapshotReady{fmt::format("10.0.0.{}:5000", n + 1), "/dev/shm/x", ""}.Encode());
  for (int n = 0; n < 3; ++n)
    c.Send(n, MsgType::kFetched, msg::Fetched{0, -1, "", 0, 0, ""}.Encode());
  c.Reserve();
  c.StartWorkers();
  for (uint32_t n = 0; n < 3 && saved; ++n) {
    const uint32_t prev = (n + 2) % 3;
    msg::SnapshotHeld h;
    h.added = {E(2 * n, n), E(2 * n + 1, n), E(2 * prev, prev), E(2 * prev + 1, prev)};
    c.Send(static_cast<int>(n), MsgType::kSnapshotHeld, h.Encode());
  }
}

void Reshaped(FakeCluster& c, int node, std::vector<msg::RankVerdict> verdicts, const std::string& error = "") {
  c.Send(node, MsgType::kReshaped,
         msg::Reshaped{static_cast<uint32_t>(c.control().generation()), std::move(verdicts), error, 900}.Encode());
}
// `node` confirms every move of the Reshape it got.
void ConfirmReshape(FakeCluster& c, int node) {
  std::vector<msg::RankVerdict> v;
  for (const msg::RankMove& mv : c.Last<msg::Reshape>(node, MsgType::kReshape)->moves) v.push_back({mv.new_rank, 1, ""});
  Reshaped(c, node, v);
}
void Started(FakeCluster& c, int node, int rank) {
  c.Send(node, MsgType::kWorkerStarted,
         msg::WorkerStarted{static_cast<uint32_t>(c.control().generation()), rank, 2000 + rank}.Encode());
}
std::vector<std::pair<int, int>> Moves(const msg::Reshape& r) {
  std::vector<std::pair<int, int>> out;
  for (const auto& m : r.moves) out.emplace_back(m.old_rank, m.new_rank);
  return out;
}
// The moves of the last Reshape `node` got (it must have got one).
std::vector<std::pair<int, int>> MovesOf(FakeCluster& c, int node) {
  auto r = c.Last<msg::Reshape>(node, MsgType::kReshape);
  REQUIRE(r);
  return Moves(*r);
}
std::string Env(const msg::WorkerSpec& w, const std::string& key) {
  for (const auto& [k, v] : w.env)
    if (k == key) return v;
  return "<unset>";
}
bool HasNotice(const FakeCluster& c, const std::string& text) {
  for (const auto& n : c.notices())
    if (n.find(text) != std::string::npos) return true;
  return false;
}
// The generation after a full restart fetches its save, starts, and every
// rank exits 0: the job is done.
void FinishGeneration(FakeCluster& c) {
  for (size_t n = 0; n < c.candidates(); ++n) {
    auto f = c.Last<msg::Fetch>(static_cast<int>(n), MsgType::kFetch);
    if (f && static_cast<int>(f->generation) == c.control().generation())
      c.Send(static_cast<int>(n), MsgType::kFetched, msg::Fetched{f->generation, f->step, f->id.set, 0, 0, ""}.Encode());
  }
  c.Reserve();
  c.StartWorkers();
  for (int rank = 0; rank < c.control().world_size(); ++rank) c.Exit(rank, 0);
  REQUIRE(c.done());
}
int Stops(FakeCluster& c) { return c.Count(0, MsgType::kStop) + c.Count(1, MsgType::kStop) + c.Count(2, MsgType::kStop); }

}  // namespace

TEST_CASE("job control in place: a crashed worker restarts alone; the others keep running and roll back", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c);
  c.Exit(3, 1);
  CHECK(Stops(c) == 0);
  CHECK(c.control().state() == CoordState::kRunning);
  CHECK(c.control().generation() == 1);
  CHECK(c.control().restarts() == 1);  // counted against elastic.max_restarts
  auto r0 = c.Last<msg::Reshape>(0, MsgType::kReshape);
  auto r1 = c.Last<msg::Reshape>(1, MsgType::kReshape);
  auto r2 = c.Last<msg::Reshape>(2, MsgType::kReshape);
  REQUIRE((r0 && r1 && r2));
  CHECK(Moves(*r0) == std::vector<std::pair<int, int>>{{0, 0}, {1, 1}});
  CHECK(Moves(*r1) == std::vector<std::pair<int, int>>{{2, 2}});
  CHECK(Moves(*r2) == std::vector<std::pair<int, int>>{{4, 4}, {5, 5}});
  CHECK(r1->generation == 1);
  CHECK(r1->step == 400);
  CHECK(r1->id == Id());
  CHECK(r1->world == 6);
  CHECK(r1->deadline_ms == 5000);
  CHECK(r1->sources.size() == 6);
  CHECK(r1->store_addr.empty());  // the workers hold this coordinator's store
  CHECK(r1->store_token.empty());
  // Only w1 gets an Assign of generation 1: for rank 3 alone, resuming from the save.
  auto a = c.Last<msg::Assign>(1, MsgType::kAssign);
  REQUIRE(a);
  CHECK(a->generation == 1);
  REQUIRE(a->workers.size() == 1);
  CHECK(a->workers[0].rank == 3);
  CHECK(Env(a->workers[0], "DSLAUNCH_RESUME_STEP") == "400");
  CHECK(Env(a->workers[0], "DSLAUNCH_RESUME_SET") == "000000005e740012");
  CHECK(Env(a->workers[0], "DSLAUNCH_GENERATION") == "1");
  CHECK(Env(a->workers[0], "DSLAUNCH_CONTROL_FD") == "3");  // its agent gives it a control channel
  CHECK(c.Last<msg::Assign>(0, MsgType::kAssign)->generation == 0);

  c.Stall(0.041);
  for (int n = 0; n < 3; ++n) ConfirmReshape(c, n);
  CHECK_FALSE(HasNotice(c, "recovered in place"));  // the replacement has not started
  Started(c, 1, 3);
  CHECK(c.notices().back() == "recovered in place at step 400 in 41 ms: 6 shards from memory");
  // The survivors are generation 1's workers: the job ends when all of them do.
  for (int rank = 0; rank < 6; ++rank)
    c.Send(rank / 2, MsgType::kWorkerExited, msg::WorkerExited{1, rank, 2000 + rank, 0, 0, 0, 0}.Encode());
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 0);
}

TEST_CASE("job control in place: a lost node's ranks are dropped and the survivors renumbered, its shards from a replica", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c);
  c.Drop(0);
  CHECK(Stops(c) == 0);
  auto r1 = c.Last<msg::Reshape>(1, MsgType::kReshape);
  auto r2 = c.Last<msg::Reshape>(2, MsgType::kReshape);
  REQUIRE((r1 && r2));
  CHECK(c.Count(0, MsgType::kReshape) == 0);
  CHECK(Moves(*r1) == std::vector<std::pair<int, int>>{{2, 0}, {3, 1}});
  CHECK(Moves(*r2) == std::vector<std::pair<int, int>>{{4, 2}, {5, 3}});
  CHECK(r1->world == 4);
  CHECK(c.Last<msg::Assign>(1, MsgType::kAssign)->generation == 0);  // nobody new starts
  ConfirmReshape(c, 1);
  ConfirmReshape(c, 2);
  CHECK(c.notices().back() == "recovered in place at step 400 in 0 ms: 2 shards from w1's replica of w0, 4 from memory");
  CHECK(c.control().world_size() == 4);
}

TEST_CASE("job control in place: after a takeover that lost a node, the survivors reshape into the new leader's "
          "store; the next reshape names none", "[jobcontrol][inplace]") {
  FakeCluster old(kThreeHosts, InPlaceJob());
  RunWithSave(old);
  FakeCluster c(kThreeHosts, InPlaceJob());  // the standby, taking over from `old`'s state
  REQUIRE(c.control().Adopt(old.control().State()).ok());
  c.RegisterAll();
  for (int n : {1, 2}) {  // back with their workers, snapshots and holdings, as a Resume after a takeover is
    c.Send(n, MsgType::kSnapshotReady, msg::SnapshotReady{fmt::format("10.0.0.{}:5000", n + 1), "/dev/shm/x", ""}.Encode());
    const uint32_t prev = static_cast<uint32_t>(n + 2) % 3;
    msg::SnapshotHeld h;
    h.added = {E(2 * n, n), E(2 * n + 1, n), E(2 * prev, prev), E(2 * prev + 1, prev)};
    c.Send(n, MsgType::kSnapshotHeld, h.Encode());
    msg::Resume r{0, 1, 5, {{2 * n, 1000 + 2 * n}, {2 * n + 1, 1001 + 2 * n}}};
    c.Send(n, MsgType::kResume, r.Encode());
  }
  c.Drop(0);  // the old coordinator's host, with its ranks, before its Resume
  CHECK(Stops(c) == 0);
  auto r1 = c.Last<msg::Reshape>(1, MsgType::kReshape);
  auto r2 = c.Last<msg::Reshape>(2, MsgType::kReshape);
  REQUIRE((r1 && r2));
  CHECK(Moves(*r1) == std::vector<std::pair<int, int>>{{2, 0}, {3, 1}});
  for (const auto& r : {r1, r2}) {
    CHECK(r->generation == 1);
    CHECK(r->store_addr == "127.0.0.1:7000");  // this coordinator's (FakeCluster's Start)
    CHECK(r->store_token == StoreToken("secret", "job", 1));
  }
  CHECK(HasNotice(c, "generation 0 cannot be taken over as it runs: w0 did not come back; its survivors recover "
                    "in place if they can, else it restarts"));
  ConfirmReshape(c, 1);
  ConfirmReshape(c, 2);
  CHECK(c.notices().back() == "recovered in place at step 400 in 0 ms: 2 shards from w1's replica of w0, 4 from memory");
  // Its workers now hold this coordinator's store: a second loss's Reshape names none.
  c.Send(2, MsgType::kSnapshotHeld, msg::SnapshotHeld{}.Encode());
  c.Exit(1, 1);
  auto again = c.Last<msg::Reshape>(1, MsgType::kReshape);
  REQUIRE(again);
  CHECK(again->generation == 2);
  CHECK(again->store_addr.empty());
}

TEST_CASE("job control in place: a node evicted as slow leaves through the in-place path", "[jobcontrol][inplace]") {
  JobSpec job = InPlaceJob();
  job.elastic.evict_slow = true;
  FakeCluster c(kThreeHosts, job);
  RunWithSave(c);
  for (int s = 0; s <= 4; ++s) {  // w2 2.4x slower in compute than the others
    for (int node = 0; node < 3; ++node) {
      msg::Progress p{0, {}};
      for (int i = 0; i < 2; ++i) p.ranks.push_back({2 * node + i, 410 + s, 500000, node == 2 ? 480000 : 200000, -1});
      c.Send(node, MsgType::kProgress, p.Encode());
    }
    c.Advance(1.0);
  }
  REQUIRE(HasNotice(c, "slow: w2 (ranks 4-5)"));
  for (uint32_t n = 0; n < 3; ++n) {  // the next save, every node's: the snapshot boundary
    const uint32_t prev = (n + 2) % 3;
    msg::SnapshotHeld h;
    for (uint32_t shard : {2 * n, 2 * n + 1, 2 * prev, 2 * prev + 1}) {
      msg::ShardEntry e = E(shard, shard / 2);
      e.step = 500;
      h.added.push_back(e);
    }
    c.Send(static_cast<int>(n), MsgType::kSnapshotHeld, h.Encode());
  }
  CHECK(HasNotice(c, "evict: w2 (slow) leaves at the snapshot of step 500"));
  CHECK(Stops(c) == 0);
  CHECK(MovesOf(c, 0) == std::vector<std::pair<int, int>>{{0, 0}, {1, 1}});
  CHECK(MovesOf(c, 1) == std::vector<std::pair<int, int>>{{2, 2}, {3, 3}});
  CHECK(MovesOf(c, 2) == std::vector<std::pair<int, int>>{{4, -1}, {5, -1}});  // the evicted node's workers stop
  CHECK(c.Last<msg::Reshape>(0, MsgType::kReshape)->world == 4);
  CHECK(c.Last<msg::Reshape>(0, MsgType::kReshape)->step == 500);
}

TEST_CASE("job control in place: a GPU failure's host leaves through the in-place path", "[jobcontrol][inplace]") {
  JobSpec job = InPlaceJob();
  job.trainer_yaml = "model: {layers: [4, 2]}";
  FakeCluster c(kThreeHosts, job);
  RunWithSave(c);
  c.Exit(3, 4);  // dstrain's GPU failure on w1
  CHECK(HasNotice(c, "w1 sits out the rest of the job: rank 3 had a GPU failure (dstrain exit 4)"));
  CHECK(Stops(c) == 0);
  CHECK(MovesOf(c, 0) == std::vector<std::pair<int, int>>{{0, 0}, {1, 1}});
  CHECK(MovesOf(c, 1) == std::vector<std::pair<int, int>>{{2, -1}});  // rank 2 stops too; rank 3 has exited
  CHECK(MovesOf(c, 2) == std::vector<std::pair<int, int>>{{4, 2}, {5, 3}});
  CHECK(c.Last<msg::Reshape>(0, MsgType::kReshape)->world == 4);
}

TEST_CASE("job control in place: a standby takes a lost node's ranks: it gathers, then starts them beside nobody", "[jobcontrol][inplace]") {
  JobSpec job = InPlaceJob();
  job.elastic.max_nodes = 2;  // w2 waits as a standby
  FakeCluster c(kThreeHosts, job);
  c.RegisterAll();
  for (int n = 0; n < 3; ++n)
    c.Send(n, MsgType::kSnapshotReady, msg::SnapshotReady{fmt::format("10.0.0.{}:5000", n + 1), "/dev/shm/x", ""}.Encode());
  for (int n = 0; n < 2; ++n) c.Send(n, MsgType::kFetched, msg::Fetched{0, -1, "", 0, 0, ""}.Encode());
  c.Reserve();
  c.StartWorkers();
  const msg::SnapshotId id{"feed0001", 4, 0, "c0", "000000005e740012"};
  for (uint32_t n = 0; n < 2; ++n) {
    msg::SnapshotHeld h;
    for (uint32_t shard = 0; shard < 4; ++shard) h.added.push_back(msg::ShardEntry{400, shard, id, shard / 2, 1, 64});
    c.Send(static_cast<int>(n), MsgType::kSnapshotHeld, h.Encode());
  }
  c.Drop(1);
  auto r0 = c.Last<msg::Reshape>(0, MsgType::kReshape);
  auto r2 = c.Last<msg::Reshape>(2, MsgType::kReshape);
  REQUIRE((r0 && r2));
  CHECK(Moves(*r0) == std::vector<std::pair<int, int>>{{0, 0}, {1, 1}});
  CHECK(r2->moves.empty());  // it only gathers ...
  CHECK(r2->sources.size() == 4);
  CHECK(r2->world == 4);
  auto a = c.Last<msg::Assign>(2, MsgType::kAssign);  // ... and starts ranks 2 and 3
  REQUIRE(a);
  REQUIRE(a->workers.size() == 2);
  CHECK(a->workers[0].rank == 2);
  CHECK(a->workers[1].rank == 3);
  ConfirmReshape(c, 0);
  ConfirmReshape(c, 2);
  Started(c, 2, 2);
  Started(c, 2, 3);
  CHECK(c.notices().back() == "recovered in place at step 400 in 0 ms: 2 shards from memory, 2 from w0's replica of w1");
}

TEST_CASE("job control in place: a worker that did not confirm falls back to the full restart, said once", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c);
  c.Exit(3, 1);
  ConfirmReshape(c, 0);
  Reshaped(c, 1, {{2, 0, "did not confirm within 5 s"}});
  CHECK(c.notices().back() ==
        "in-place recovery of generation 1 failed: w1 rank 2 did not confirm within 5 s; restarting every worker");
  auto stop = c.Last<msg::Stop>(2, MsgType::kStop);
  REQUIRE(stop);
  CHECK(stop->generation == 1);
  ConfirmReshape(c, 2);  // late: changes nothing
  c.ConfirmStops();
  CHECK(c.control().state() == CoordState::kGathering);
  CHECK(c.control().generation() == 2);
  CHECK(c.control().restarts() == 1);  // the failure costs one restart, not two
  CHECK(HasNotice(c, "restart 1/3: generation 2 on 3 nodes, world size 6, after host w1: in-place recovery failed: "
                     "w1 rank 2 did not confirm within 5 s"));
  // One restart, one cause: the crash, the recovery's failure folded into it.
  REQUIRE(c.record().restart_causes().size() == 1);
  CHECK(c.record().restart_causes()[0].rank == 3);
  FinishGeneration(c);
  const std::string summary = FormatSummary(c.record(), 6, false);
  CHECK(summary.rfind("dslaunch: all 6 workers exited 0, after 1 restart\n  restart 1 after a failure at ", 0) == 0);
  CHECK(summary.find(" UTC: host w1, rank 3, pid 1003: exited with code 1; in-place reshape failed (w1 rank 2 did not "
                     "confirm within 5 s), restarted\n") != std::string::npos);
  CHECK(summary.find("restart 2") == std::string::npos);
}

TEST_CASE("job control in place: a node that does not answer by the deadline, or cannot gather, falls back", "[jobcontrol][inplace]") {
  SECTION("silent") {
    FakeCluster c(kThreeHosts, InPlaceJob());
    RunWithSave(c);
    c.Exit(3, 1);
    ConfirmReshape(c, 0);
    ConfirmReshape(c, 1);
    Started(c, 1, 3);
    c.Advance(5.0);
    CHECK(Stops(c) == 0);
    c.Advance(1.0);  // the agents' deadline and a heartbeat interval for their answers
    CHECK(c.notices().back() ==
          "in-place recovery of generation 1 failed: w2 did not answer within 5 s; restarting every worker");
    CHECK(Stops(c) == 3);
  }
  SECTION("gather failed") {
    FakeCluster c(kThreeHosts, InPlaceJob());
    RunWithSave(c);
    c.Exit(3, 1);
    Reshaped(c, 0, {}, "host w0 could not gather step 400: shard 3: connection refused");
    CHECK(c.notices().back() ==
          "in-place recovery of generation 1 failed: host w0 could not gather step 400: shard 3: connection refused; "
          "restarting every worker");
  }
  SECTION("the replacement does not start") {
    FakeCluster c(kThreeHosts, InPlaceJob());
    RunWithSave(c);
    c.Exit(3, 1);
    for (int n = 0; n < 3; ++n) ConfirmReshape(c, n);
    c.Advance(6.0);
    CHECK(c.notices().back() ==
          "in-place recovery of generation 1 failed: rank 3 did not start within 5 s; restarting every worker");
  }
}

TEST_CASE("job control in place: no complete save to roll back to: the full restart of this generation, said why", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c, /*saved=*/false);
  c.Exit(3, 1);
  CHECK(c.notices().back() ==
        "in-place recovery of generation 1 failed: no complete snapshot to roll back to; restarting every worker");
  for (int n = 0; n < 3; ++n) CHECK(c.Count(n, MsgType::kReshape) == 0);
  auto stop = c.Last<msg::Stop>(0, MsgType::kStop);
  REQUIRE(stop);
  CHECK(stop->generation == 0);  // the agents' generation: they confirm it
  c.ConfirmStops();
  CHECK(c.control().generation() == 1);
  CHECK(c.control().state() == CoordState::kGathering);
  CHECK(c.control().restarts() == 1);
}

TEST_CASE("job control in place: a second failure during the recovery falls back and names it", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c);
  c.Exit(3, 1);
  ConfirmReshape(c, 1);
  c.Drop(2);
  CHECK(c.notices().back() == "in-place recovery of generation 1 failed: w2: agent lost: connection reset by peer; "
                              "restarting every worker");
  c.ConfirmStops();
  CHECK(c.control().generation() == 2);
  CHECK(c.control().world_size() == 4);
  CHECK(c.control().restarts() == 1);
  REQUIRE(c.record().restart_causes().size() == 1);  // the crash, not w2's loss as a second restart
  CHECK(c.record().restart_causes()[0].rank == 3);
  FinishGeneration(c);
  CHECK(FormatSummary(c.record(), 4, false).find(" UTC: host w1, rank 3, pid 1003: exited with code 1; in-place reshape "
                                                 "failed (w2: agent lost: connection reset by peer), restarted\n") !=
        std::string::npos);
}

TEST_CASE("job control in place: a worker failing during the recovery is named with its host", "[jobcontrol][inplace]") {
  FakeCluster c(kThreeHosts, InPlaceJob());
  RunWithSave(c);
  c.Exit(3, 1);
  c.Send(2, MsgType::kWorkerExited, msg::WorkerExited{1, 5, 1005, 0, 9, 0, 0}.Encode());
  CHECK(c.notices().back() ==
        "in-place recovery of generation 1 failed: w2 rank 5 was killed by signal 9; restarting every worker");
}

TEST_CASE("job control in place: the budget counts it; with none left the job stops as before", "[jobcontrol][inplace]") {
  JobSpec job = InPlaceJob();
  job.elastic.max_restarts = 1;
  FakeCluster c(kThreeHosts, job);
  RunWithSave(c);
  c.Exit(3, 1);
  for (int n = 0; n < 3; ++n) ConfirmReshape(c, n);
  Started(c, 1, 3);
  REQUIRE(HasNotice(c, "recovered in place at step 400"));
  c.Send(0, MsgType::kWorkerExited, msg::WorkerExited{1, 1, 2001, 1, 0, 0, 0}.Encode());
  CHECK(Stops(c) == 3);
  c.ConfirmStops();
  CHECK(HasNotice(c, "not restarting: all 1 restarts used (elastic.max_restarts)"));
  CHECK(c.done());
  CHECK(c.record().ExitCode() == 1);
}

TEST_CASE("job control in place: a command's workers get the channel and are reshaped as dstrain's (dslaunch.torch.elastic)", "[jobcontrol][inplace]") {
  JobSpec job = InPlaceJob();
  job.command = {"python3", "train.py"};
  FakeCluster c(kThreeHosts, job);
  RunWithSave(c);
  CHECK_FALSE(HasNotice(c, "elastic.in_place"));
  CHECK(Env(c.Last<msg::Assign>(1, MsgType::kAssign)->workers.at(0), "DSLAUNCH_CONTROL_FD") == "3");
  c.Exit(3, 1);
  CHECK(Stops(c) == 0);
  CHECK(c.Count(1, MsgType::kReshape) == 1);
}

TEST_CASE("job control in place: a job without snapshots says it restarts every worker", "[jobcontrol][inplace]") {
  {
    JobSpec job = InPlaceJob();
    job.checkpoint.dir.clear();
    FakeCluster c(kThreeHosts, job);
    c.Run();
    CHECK(c.notices().front() == "elastic.in_place: snapshots are off (no checkpoint dir, or checkpoint.shared: "
                                 "true with replicas: 0), so a failure restarts every worker");
    c.Exit(3, 1);
    CHECK(Stops(c) == 3);
  }
}

}  // namespace ds::test
