// JobState (job_state.h), the job's durable state as one value: it survives
// its JSON text (cooldowns as what is left, on another process's clock),
// bad text is refused naming the key, and JobControl gives it after its
// transitions and takes it back, so a coordinator taking over keeps the
// restart budget, the cooldowns and the generation number; it is given to
// a listener after each transition and never for a heartbeat.
#include "launcher/coordinator/job_state.h"

#include <catch2/catch.hpp>

#include "tests/launcher/coordinator/fake_cluster.h"

namespace ds::test {
namespace {

using std::chrono::seconds;

JobSpec Elastic(int max_restarts) {
  JobSpec job;
  job.command = {"/bin/true"};
  job.elastic.max_restarts = max_restarts;
  job.elastic.min_nodes = 1;
  job.elastic.heartbeat_interval = 1.0;
  job.elastic.heartbeat_timeout = 3.0;
  job.elastic.max_host_failures = 1;
  job.elastic.host_cooldown = 60;
  return job;
}

const char* kThreeHosts = "w0 slots=2\nw1 slots=2\nw2 slots=2\n";

JobState Sample(Clock::time_point now) {
  JobState s;
  s.job_id = "job";
  s.run_id = "feed0001";
  s.phase = CoordState::kRunning;
  s.generation = 3;
  s.generation_nodes = {0, 2};
  s.world_size = 4;
  s.master_port = 29500;
  s.candidates = {{"w0", true, false}, {"w1", true, true}, {"w2", true, false}};
  s.budget.restarts = 2;
  s.budget.host_failures = {{"w0", 1}};
  s.budget.cooldown_until = {{"w1", now + seconds(45)}};
  s.budget.gpu_out = {"w9"};
  s.evicted_until = {{1, now + seconds(10)}};
  s.recovery_point = {400, "s0"};
  s.worst_at_risk = 120;
  return s;
}

}  // namespace

TEST_CASE("job state: the JSON text gives the same value back; cooldowns move to the reader's clock", "[unit]") {
  const Clock::time_point t0{std::chrono::hours(100)};
  const JobState s = Sample(t0);
  const std::string text = EncodeJobState(s, t0);
  CHECK(text.find("\"version\":1") != std::string::npos);
  CHECK(text.find("\"host_cooldown_left_ms\":{\"w1\":45000}") != std::string::npos);
  auto back = DecodeJobState(text, t0, "etcd /dslaunch/job/state");
  REQUIRE(back.ok());
  CHECK(*back == s);
  // Read by another process whose steady clock is elsewhere: 45 s are still left.
  const Clock::time_point t1{std::chrono::hours(7)};
  auto there = DecodeJobState(text, t1, "etcd /dslaunch/job/state");
  REQUIRE(there.ok());
  CHECK(there->budget.cooldown_until.at("w1") == t1 + seconds(45));
  CHECK(there->evicted_until.at(1) == t1 + seconds(10));
  // A cooldown over when the value was taken stays over.
  JobState past = s;
  past.budget.cooldown_until["w1"] = t0 - seconds(5);
  CHECK(DecodeJobState(EncodeJobState(past, t0), t1, "x")->budget.cooldown_until.at("w1") == t1);
}

TEST_CASE("job state: bad text is refused naming where and the key", "[unit]") {
  const Clock::time_point t0{std::chrono::hours(100)};
  const std::string good = EncodeJobState(Sample(t0), t0);
  auto error = [&](const std::string& text) {
    auto r = DecodeJobState(text, t0, "state");
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK(error("{not json") == "state: not a JSON object");
  CHECK(error("[1]") == "state: not a JSON object");
  CHECK(error(with("\"version\":1", "\"version\":2")) ==
        "state: job state version 2, expected 1 (written by another dslaunch version)");
  CHECK(error(with("\"generation\":3", "\"generation\":\"3\"")) == "state: key 'generation': unexpected string");
  CHECK(error(with("\"generation\":3,", "")) == "state: missing key 'generation'");
  CHECK(error(with("\"phase\":\"running\"", "\"phase\":\"flying\"")) == "state: key 'phase': unknown phase 'flying'");
  CHECK(error(with("\"generation_nodes\":[0,2]", "\"generation_nodes\":[0,7]")) ==
        "state: key 'generation_nodes': candidate 7 out of range");
  CHECK(error(with("\"evicted_left_ms\":{\"1\"", "\"evicted_left_ms\":{\"x\"")) ==
        "state: key 'evicted_left_ms': 'x' is not a candidate");
}

TEST_CASE("job state: JobControl's value after a restart, taken back by another JobControl keeps the budget",
          "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  c.Exit(2, 1);  // rank 2 runs on w1: a restart, and w1 sits out 60 s
  c.ConfirmStops();
  c.Reserve(29600);
  c.StartWorkers();
  const JobState s = c.control().State();
  CHECK(s.phase == CoordState::kRunning);
  CHECK(s.generation == 1);
  CHECK(s.generation_nodes == std::vector<int>{0, 2});
  CHECK(s.world_size == 4);
  CHECK(s.master_port == 29600);
  CHECK(s.budget.restarts == 1);
  REQUIRE(s.budget.cooldown_until.count("w1") == 1);
  CHECK(s.candidates.size() == 3);
  CHECK(s.candidates[1].registered);

  // A second coordinator takes the job over from the text: one restart is left, not two.
  FakeCluster d(kThreeHosts, Elastic(2));
  auto text = DecodeJobState(EncodeJobState(s, Clock::time_point{}), Clock::time_point{}, "state");
  REQUIRE(text.ok());
  REQUIRE(d.control().Restore(*text).ok());
  CHECK(d.control().restarts() == 1);
  CHECK(d.control().generation() == 1);
  CHECK(d.control().State().budget.cooldown_until.count("w1") == 1);
  d.Run();
  d.Exit(0, 1);
  d.ConfirmStops();
  d.Reserve();
  CHECK(d.control().generation() == 2);  // the generations go on from the job's, not from 0
  d.StartWorkers();
  d.Exit(0, 1);
  d.ConfirmStops();
  CHECK(d.done());  // the budget was spent across both coordinators
  CHECK(d.control().restarts() == 2);

  // Another job's state, or another plan's, is refused.
  FakeCluster e(kThreeHosts, Elastic(2));
  JobState other = s;
  other.job_id = "other";
  CHECK(e.control().Restore(other).message() == "job state of job 'other', not of this job 'job'");
  other = s;
  other.candidates.pop_back();
  CHECK(e.control().Restore(other).message() == "job state with 2 candidates, this plan has 3");
}

TEST_CASE("job state: a new phase or generation given at once, other changes together within kStateEvery, never "
          "for a heartbeat", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  std::vector<JobState> given;
  c.control().OnStateChange([&](const JobState& s) { given.push_back(s); });
  c.Register(0);
  REQUIRE(given.size() == 1);  // the first value
  c.Register(1);
  CHECK(given.size() == 1);  // registrations: looked at together, within kStateEvery
  c.Advance(0.05);
  REQUIRE(given.size() == 2);
  CHECK(given.back() == c.control().State());
  c.Register(2);  // the last: the generation is reserved (a new phase), given at once
  REQUIRE(given.size() == 3);
  CHECK(given.back().phase == CoordState::kReserving);
  c.Reserve();
  c.StartWorkers();
  CHECK(given.back().phase == CoordState::kRunning);
  CHECK(given.back() == c.control().State());
  for (size_t i = 1; i < given.size(); ++i) CHECK_FALSE(given[i] == given[i - 1]);  // changes only
  const size_t running = given.size();
  c.Advance(30);  // 30 heartbeats of every agent, and the coordinator's timers
  CHECK(given.size() == running);

  c.Exit(2, 1);  // rank 2 on w1: a restart counted, w1 cooling down
  CHECK(given.size() > running);  // stopping: a new phase
  c.ConfirmStops();
  c.Reserve(29600);
  c.StartWorkers();
  CHECK(given.back() == c.control().State());
  CHECK(given.back().generation == 1);
  CHECK(given.back().budget.restarts == 1);
  CHECK(given.back().master_port == 29600);
  const size_t restarted = given.size();
  c.Advance(5);
  CHECK(given.size() == restarted);
  for (int rank = 0; rank < 4; ++rank) c.Exit(rank, 0);
  REQUIRE(c.done());
  CHECK(given.back().phase == CoordState::kDone);  // the end at once
}

TEST_CASE("job control fencing: with a leader's token every frame to an agent goes inside Fenced, with the token "
          "of the moment; without one nothing goes", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();  // bare frames: no fencing set
  uint64_t token = 41;
  c.control().SetFencing([&] { return token; });
  const size_t before = c.link(0).sent.size();
  c.Advance(1);  // a heartbeat: the coordinator's Pings
  token = 57;    // leading again, under a newer token
  c.Exit(2, 1);  // w1's rank fails: a Stop to every agent of the generation
  std::vector<msg::Fenced> fenced;
  for (size_t i = before; i < c.link(0).sent.size(); ++i) {
    const auto& [type, payload] = c.link(0).sent[i];
    REQUIRE(type == wire::MsgType::kFenced);  // nothing bare once fencing is on
    fenced.push_back(msg::Fenced::Decode(payload).value());
  }
  REQUIRE(fenced.size() >= 2);
  CHECK(fenced.front().token == 41);
  CHECK(static_cast<wire::MsgType>(fenced.front().type) == wire::MsgType::kPing);
  CHECK(fenced.back().token == 57);
  CHECK(static_cast<wire::MsgType>(fenced.back().type) == wire::MsgType::kStop);
  CHECK(msg::Stop::Decode(fenced.back().payload).value().generation == 0);

  // Deposed (its lease lost, token 0 while it does not lead): it commands nobody, not even a bare Ping.
  token = 0;
  const size_t deposed = c.link(0).sent.size();
  c.Advance(2);
  c.ConfirmStops();
  CHECK(c.link(0).sent.size() == deposed);
}

TEST_CASE("job control fencing: a leader without its lease (a partition) judges no silence and starts nothing; "
          "leading again, the silence counts afresh", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  uint64_t token = 41;
  c.control().SetFencing([&] { return token; });
  token = 0;  // its lease lost: on its side of a partition, every other agent falls silent
  c.Silence(1);
  c.Silence(2);
  c.Advance(10);  // ten heartbeat timeouts
  CHECK(c.lost_events().empty());
  CHECK(c.control().restarts() == 0);
  CHECK(c.control().state() == CoordState::kRunning);
  CHECK_FALSE(c.done());

  token = 57;  // leading again, and nodes 1 and 2 still silent: judged as ever, from when it was last forgiven
  c.Advance(3);
  CHECK(c.lost_events() == std::vector<int>{1, 2});
}

TEST_CASE("job control fencing: a link that closed while the leader did not lead is judged once it leads again, "
          "after the agents' grace to come back", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  uint64_t token = 41;
  c.control().SetFencing([&] { return token; });
  token = 0;
  c.Drop(0, "connection closed by peer");  // its agent went looking for a leader
  c.Advance(10);
  CHECK(c.lost_events().empty());
  token = 57;  // the grace here: heartbeat_timeout (3 s), from its next tick
  c.Advance(3.5);
  CHECK(c.lost_events().empty());
  c.Advance(1);
  CHECK(c.lost_events() == std::vector<int>{0});
  CHECK(c.control().state() == CoordState::kStopping);  // its generation restarts without it
}

TEST_CASE("job control fencing: an agent silent since etcd last heard the leader is judged only once etcd hears it "
          "again", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  Clock::time_point heard = c.timer().Now();  // etcd heard the leader now; nothing since
  c.control().SetFencing([] { return uint64_t{41}; }, [&] { return heard; });
  c.Silence(2);
  c.Advance(5);  // well past heartbeat_timeout (3 s): the leader may be the one cut off
  CHECK(c.lost_events().empty());
  heard = c.timer().Now();  // a keepalive answered: the leader is not cut off, node 2 is
  c.Advance(0.5);
  CHECK(c.lost_events() == std::vector<int>{2});
}

TEST_CASE("job control fencing: an agent whose link closed while the leader did not lead comes back to it with its "
          "workers of the generation, and they run on", "[jobcontrol]") {
  FakeCluster c(kThreeHosts, Elastic(2));
  c.Run();
  uint64_t token = 41;
  c.control().SetFencing([&] { return token; });
  token = 0;
  c.Drop(1, "connection closed by peer");  // it went looking for a new leader
  c.Advance(1);
  CHECK(c.fleet().away == std::vector<int>{1});  // its key opens a registration again
  CHECK_THROWS_WITH(c.Register(1), Catch::Contains("does not lead the job now"));  // not while it does not lead
  token = 57;  // leading again before the agent is judged: it comes back
  c.Register(1);
  msg::Resume r;
  r.generation = 0;
  r.running = 1;
  for (int rank : {2, 3}) r.workers.push_back({rank, 100 + rank});
  c.Send(1, wire::MsgType::kResume, r.Encode());
  c.Advance(5);
  CHECK(c.lost_events().empty());
  CHECK(c.control().restarts() == 0);
  CHECK(c.Count(1, wire::MsgType::kStop) == 0);
  CHECK(c.control().state() == CoordState::kRunning);
  CHECK(c.notices().back() == "w1 is back: it had lost this coordinator while it did not lead");
}

}  // namespace ds::test
