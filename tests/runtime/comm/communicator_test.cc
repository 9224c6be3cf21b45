// Communicator on Gloo: every collective against a hand-computed result on
// 1, 2 and 3 ranks (forked processes), 16-bit sums, the persistent allreduce
// (whole, in pieces, larger than the socket buffers), and the failure contract:
// a peer SIGKILLed or stopped mid-collective makes the others throw CommError
// within about the timeout, never hang.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <numeric>

#include <catch2/catch.hpp>

#include "runtime/numeric/half.h"
#include "tests/runtime/multiproc.h"

using namespace ds::rt;
using ds::rt::testing::MultiProc;

namespace {

// Every rank checks its own results and exits non-zero on a mismatch.
int CollectivesBody(Communicator& c) {
  const int r = c.rank(), n = c.size();
  int bad = 0;
  // AllReduceSum fp32: rank r contributes (r+1)*i.
  std::vector<float> a(1000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float((r + 1) * i);
  c.AllReduceSum(a.data(), a.size());
  const float tri = n * (n + 1) / 2.f;
  for (size_t i = 0; i < a.size(); ++i) bad += a[i] != tri * i;
  // double
  double d[2] = {1.0 * r, 0.5};
  c.AllReduceSum(d, 2);
  bad += d[0] != n * (n - 1) / 2.0 || d[1] != 0.5 * n;
  // fp16 and bf16
  std::vector<uint16_t> h(64, FloatToHalf(1.5f)), b(64, FloatToBf16(2.0f));
  c.AllReduceSum(h.data(), h.size(), Half16::kFp16);
  c.AllReduceSum(b.data(), b.size(), Half16::kBf16);
  for (auto v : h) bad += HalfToFloat(v) != 1.5f * n;
  for (auto v : b) bad += Bf16ToFloat(v) != 2.0f * n;
  // ReduceScatter with uneven counts: 7, 5, 0, ...
  std::vector<size_t> counts(n);
  for (int i = 0; i < n; ++i) counts[i] = i == 2 ? 0 : 7 - 2 * i % 7;
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  std::vector<float> in(total), out(counts[r] + 1, -1.f);
  for (size_t i = 0; i < total; ++i) in[i] = float(i + r);
  c.ReduceScatter(in.data(), out.data(), counts);
  const size_t off = std::accumulate(counts.begin(), counts.begin() + r, size_t{0});
  for (size_t i = 0; i < counts[r]; ++i)
    bad += out[i] != float(n * (off + i) + n * (n - 1) / 2);
  std::vector<uint16_t> in16(total), out16(counts[r]);
  for (size_t i = 0; i < total; ++i) in16[i] = FloatToBf16(float(i % 4));
  c.ReduceScatter(in16.data(), out16.data(), counts, Half16::kBf16);
  for (size_t i = 0; i < counts[r]; ++i) bad += Bf16ToFloat(out16[i]) != float(n * ((off + i) % 4));
  // AllGather uneven.
  std::vector<float> mine(counts[r], float(r)), all(total);
  c.AllGather(mine.data(), all.data(), counts);
  size_t at = 0;
  for (int q = 0; q < n; ++q)
    for (size_t i = 0; i < counts[q]; ++i) bad += all[at++] != float(q);
  // Broadcast from the last rank.
  char msg[16] = {};
  if (r == n - 1) std::snprintf(msg, sizeof(msg), "hello %d", r);
  c.Broadcast(msg, sizeof(msg), n - 1);
  bad += std::string(msg) != "hello " + std::to_string(n - 1);
  c.Barrier();
  if (bad) std::fprintf(stderr, "rank %d: %d mismatches\n", r, bad);
  return bad ? 1 : 0;
}

}  // namespace

TEST_CASE("gloo collectives match hand-computed sums on 1, 2 and 3 ranks", "[communicator]") {
  for (int world : {1, 2, 3}) {
    MultiProc mp;
    auto codes = mp.Run(world, CollectivesBody);
    INFO("world " << world);
    CHECK(codes == std::vector<int>(world, 0));
  }
}

// Two persistent allreduces, run three times each, interleaved with a
// collective on the main context (rank r contributes (r + 1) * i + step);
// then a persistent reduce-scatter and all-gather.
int PersistentBody(Communicator& c) {
  const int r = c.rank(), n = c.size();
  int bad = 0;
  std::vector<float> a(10007), b(3);
  auto ra = c.MakePersistentAllReduce(a.data(), a.size());
  auto rb = c.MakePersistentAllReduce(b.data(), b.size());
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = float((r + 1) * i + step);
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(r);
    ra->Run();
    double d = 1;
    c.AllReduceSum(&d, 1);
    rb->Run();
    const float tri = n * (n + 1) / 2.f;
    for (size_t i = 0; i < a.size(); ++i) bad += a[i] != tri * i + float(n * step);
    for (float v : b) bad += v != n * (n - 1) / 2.f;
    bad += d != n;
  }
  // Persistent reduce-scatter and all-gather over uneven counts (rank 2's
  // piece is empty), three times each.
  std::vector<size_t> counts(n);
  for (int q = 0; q < n; ++q) counts[q] = q == 2 ? 0 : 3001 - 2 * q;
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t off = std::accumulate(counts.begin(), counts.begin() + r, size_t{0});
  auto scatter = c.MakePersistentReduceScatter(counts);
  auto gather = c.MakePersistentAllGather(counts);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> in(total), piece(counts[r] + 1, -1.f);
    for (size_t i = 0; i < total; ++i) in[i] = float(i + r + step);
    const std::vector<float> before = in;
    scatter->Run(in.data(), piece.data());
    bad += in != before;  // not clobbered
    for (size_t i = 0; i < counts[r]; ++i)
      bad += piece[i] != float(n * (off + i + step) + n * (n - 1) / 2);
    bad += piece[counts[r]] != -1.f;  // nothing written past this rank's piece
    // All-gather with `in` being this rank's own piece of `out`.
    std::vector<float> all(total, -1.f);
    for (size_t i = 0; i < counts[r]; ++i) all[off + i] = float(r * 10000 + i + step);
    gather->Run(all.data() + off, all.data());
    size_t at = 0;
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < counts[q]; ++i) bad += all[at++] != float(q * 10000 + i + step);
  }
  if (bad) std::fprintf(stderr, "rank %d: %d mismatches\n", r, bad);
  return bad ? 1 : 0;
}

TEST_CASE("persistent collectives match hand-computed results, whole and in pieces",
          "[communicator]") {
  // 4 KiB pieces: 10 Gloo calls for the allreduce of 10,007 floats, and
  // several rounds (and width classes) for the 3,001-float pieces.
  for (size_t piece : {size_t{0}, size_t{4096}}) {
    for (int world : {1, 2, 3}) {
      MultiProc mp;
      mp.options().bulk_chunk_bytes = piece;
      auto codes = mp.Run(world, PersistentBody);
      INFO("world " << world << ", piece " << piece);
      CHECK(codes == std::vector<int>(world, 0));
    }
  }
}

TEST_CASE("without the sync-mode context the persistent collectives are the one-shot calls", "[communicator]") {
  MultiProc mp;
  mp.options().bulk = false;
  CHECK(mp.Run(3, PersistentBody) == std::vector<int>(3, 0));
}

TEST_CASE("ranks whose hosts allow different piece sizes agree on the smallest", "[communicator]") {
  // As if the hosts' net.core.wmem_max differed: each rank asks for its own size.
  MultiProc mp;
  mp.set_rank_options([](int rank, GlooOptions& o) { o.bulk_chunk_bytes = 4096u << rank; });
  auto codes = mp.Run(3, PersistentBody);
  CHECK(codes == std::vector<int>(3, 0));
}

TEST_CASE("a persistent allreduce larger than the socket buffers does not deadlock",
          "[communicator]") {
  // 64 MiB: unchunked, both ranks would block in a sync-mode send at once.
  MultiProc mp;
  auto codes = mp.Run(2, [](Communicator& c) {
    std::vector<float> v(16 << 20, float(c.rank() + 1));
    c.MakePersistentAllReduce(v.data(), v.size())->Run();
    return v.front() == 3.f && v.back() == 3.f ? 0 : 1;
  });
  CHECK(codes == std::vector<int>(2, 0));
}

TEST_CASE("local communicator is the identity", "[communicator]") {
  LocalCommunicator c;
  std::vector<float> in = {1, 2, 3}, out(3);
  c.AllReduceSum(in.data(), 3);
  c.ReduceScatter(in.data(), out.data(), {3});
  CHECK(out == in);
  c.AllGather(in.data(), out.data(), {3});
  CHECK(out == in);
}

// The failure tests run a plain and a persistent allreduce (sync-mode pairs).
void AllReduceLoop(Communicator& c, bool persistent, int stop_rank, int stop_at, int signal,
                   size_t n) {
  std::vector<float> v(n, 1.f);
  auto op = c.MakePersistentAllReduce(v.data(), v.size());
  for (int i = 0;; ++i) {
    if (c.rank() == stop_rank && i == stop_at) raise(signal);
    if (persistent) op->Run(); else c.AllReduceSum(v.data(), v.size());
  }
}

TEST_CASE("a peer killed mid-collective makes the others throw CommError", "[communicator]") {
  using namespace std::chrono;
  const bool persistent = GENERATE(false, true);
  INFO("persistent " << persistent);
  const auto timeout = seconds(3);
  MultiProc mp;
  auto start = steady_clock::now();
  mp.Start(3, [persistent](Communicator& c) {
    AllReduceLoop(c, persistent, 2, 5, SIGKILL, 1 << 16);
    return 0;
  }, timeout);
  auto codes = mp.Wait(seconds(30));
  auto elapsed = steady_clock::now() - start;
  CHECK(codes[0] == 42);  // CommError
  CHECK(codes[1] == 42);
  CHECK(codes[2] == 128 + SIGKILL);
  CHECK(elapsed < 2 * timeout + seconds(5));  // generous bound: proves no hang
}

TEST_CASE("a stopped (hung) peer makes the others time out with CommError", "[communicator]") {
  using namespace std::chrono;
  const bool persistent = GENERATE(false, true);
  INFO("persistent " << persistent);
  const auto timeout = seconds(2);
  MultiProc mp;
  auto start = steady_clock::now();
  mp.Start(2, [persistent](Communicator& c) {
    AllReduceLoop(c, persistent, 1, 3, SIGSTOP, 1024);
    return 0;
  }, timeout);
  int code0 = mp.WaitRank(0, seconds(20));
  auto elapsed = steady_clock::now() - start;
  mp.Kill(1);  // still stopped
  mp.Wait();
  CHECK(code0 == 42);
  CHECK(elapsed < 2 * timeout + seconds(5));
}

// --- the rendezvous store adapter over ds::StoreClient -----------------------

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/gloo_store.h"
#include "wire/store_client.h"

namespace {

// An in-memory StoreClient shared by threads (the one fake of the store).
class FakeStoreClient : public ds::StoreClient {
 public:
  ds::Status Set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> l(mu_);
    kv_[key] = value;
    cv_.notify_all();
    return ds::Status::OK();
  }
  ds::Result<std::vector<uint8_t>> Get(const std::string& key,
                                       std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, timeout, [&] { return kv_.count(key) > 0; }))
      return ds::Status::Timeout("key '" + key + "' not set");
    return kv_[key];
  }
  ds::Result<int64_t> Add(const std::string&, int64_t) override {
    return ds::Status::Internal("unused");
  }
  ds::Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> l(mu_);
    for (const auto& k : keys)
      if (!cv_.wait_for(l, timeout, [&] { return kv_.count(k) > 0; }))
        return ds::Status::Timeout("key '" + k + "' not set");
    return ds::Status::OK();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<uint8_t>> kv_;
};

}  // namespace

TEST_CASE("StoreClientStore maps Gloo's store calls onto the StoreClient", "[communicator]") {
  FakeStoreClient client;
  StoreClientStore store(client, std::chrono::milliseconds(200));
  store.set("a", {'x', 'y'});
  CHECK(store.get("a") == std::vector<char>{'x', 'y'});
  store.wait({"a"});
  CHECK_THROWS_AS(store.get("missing"), CommError);
  CHECK_THROWS_AS(store.wait({"missing"}, std::chrono::milliseconds(10)), CommError);
}

TEST_CASE("two ranks rendezvous through the StoreClient adapter", "[communicator]") {
  FakeStoreClient client;
  std::vector<float> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      StoreClientStore store(client, std::chrono::seconds(10));
      gloo::rendezvous::PrefixStore prefixed("gen0", store);
      auto comm = GlooCommunicator::Connect(prefixed, r, 2, GlooOptions{});
      float v = float(r + 1);
      comm->AllReduceSum(&v, 1);
      results[r] = v;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(results == std::vector<float>{3, 3});
}

TEST_CASE("no store configured is a clear error", "[communicator]") {
  auto r = OpenRendezvousStore(RendezvousOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() ==
        "no rendezvous store: set DSLAUNCH_STORE_ADDR (set by dslaunch) or DSLAUNCH_STORE_PATH "
        "(a directory shared by all ranks) when WORLD_SIZE > 1");
}
