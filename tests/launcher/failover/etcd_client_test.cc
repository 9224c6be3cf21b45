// The etcd client against a real etcd 3.4 member the test starts (loopback,
// TLS with the job's client certificate): keys, transactions, leases and
// watches as the gateway serves them; bounded replies; failover between
// endpoints, and errors naming each endpoint.
#include "launcher/failover/etcd_client.h"

#include <catch2/catch.hpp>

#include "tests/launcher/failover/etcd_bed.h"

namespace ds::etcd {
namespace {

using testing::EtcdBed;

TEST_CASE("client: put, get, range of a prefix, delete", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  auto rev = c->Put("/j/a", "1");
  INFO(rev.status().message());
  REQUIRE(rev.ok());
  REQUIRE(c->Put("/j/b", std::string("\0\xff binary", 9)).ok());
  REQUIRE(c->Put("/k", "other").ok());
  auto a = c->Get("/j/a");
  REQUIRE(a.ok());
  REQUIRE(*a);
  CHECK((*a)->value == "1");
  CHECK((*a)->create_revision == *rev);
  auto missing = c->Get("/j/none");
  REQUIRE(missing.ok());
  CHECK_FALSE(*missing);
  auto range = c->Range(RangeRequest{"/j/", PrefixEnd("/j/")});
  REQUIRE(range.ok());
  REQUIRE(range->kvs.size() == 2);
  CHECK(range->kvs[1].value == std::string("\0\xff binary", 9));
  auto gone = c->Delete("/j/", PrefixEnd("/j/"));
  REQUIRE(gone.ok());
  CHECK(*gone == 2);
  CHECK_FALSE(*c->Get("/j/a"));
  CHECK(*c->Get("/k"));
}

TEST_CASE("client: a transaction on the create revision takes one branch", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  TxnRequest t;
  t.compare.push_back(Compare{"/leader", Compare::Target::kCreate, Compare::Op::kEqual, 0, ""});
  t.success.push_back(PutRequest{"/leader", "first", 0});
  t.failure.push_back(RangeRequest{"/leader"});
  auto first = c->Txn(t);
  INFO(first.status().message());
  REQUIRE(first.ok());
  CHECK(first->succeeded);
  t.success[0] = PutRequest{"/leader", "second", 0};
  auto second = c->Txn(t);
  REQUIRE(second.ok());
  CHECK_FALSE(second->succeeded);
  REQUIRE(second->responses.size() == 1);
  CHECK(second->responses[0].range.kvs.at(0).value == "first");
}

TEST_CASE("client: a lease keeps its keys until revoked; then keepalive says 0 and revoke NotFound", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  auto lease = c->LeaseGrant(10);
  INFO(lease.status().message());
  REQUIRE(lease.ok());
  CHECK(lease->ttl == 10);
  REQUIRE(c->Put("/leased", "x", lease->id).ok());
  CHECK((*c->Get("/leased"))->lease == lease->id);
  auto alive = c->LeaseKeepAlive(lease->id);
  REQUIRE(alive.ok());
  CHECK(alive->ttl == 10);
  REQUIRE(c->LeaseRevoke(lease->id).ok());
  CHECK_FALSE(*c->Get("/leased"));
  auto dead = c->LeaseKeepAlive(lease->id);
  REQUIRE(dead.ok());
  CHECK(dead->ttl == 0);
  const Status again = c->LeaseRevoke(lease->id);
  CHECK(again.code() == Status::Code::kNotFound);
  CHECK(again.message() == bed->endpoints()[0] + "/v3/lease/revoke: etcdserver: requested lease not found (code 5)");
}

TEST_CASE("client: a watch of a prefix sees puts and deletes in order, and outlives a quiet wait", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto c = bed->Client();
  auto start = c->Put("/other", "-");
  REQUIRE(start.ok());
  auto w = c->WatchKey(WatchRequest{"/w/", PrefixEnd("/w/"), *start + 1});
  INFO(w.status().message());
  REQUIRE(w.ok());
  auto quiet = (*w)->Next(0.3);
  CHECK(quiet.status().code() == Status::Code::kTimeout);  // nothing yet: the watch stays open
  auto writer = bed->Client();
  REQUIRE(writer->Put("/w/1", "a").ok());
  REQUIRE(writer->Put("/elsewhere", "b").ok());
  REQUIRE(writer->Delete("/w/1").ok());
  std::vector<WatchEvent> seen;
  while (seen.size() < 2) {
    auto r = (*w)->Next(10);
    INFO(r.status().message());
    REQUIRE(r.ok());
    seen.insert(seen.end(), r->events.begin(), r->events.end());
  }
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].type == WatchEvent::Type::kPut);
  CHECK(seen[0].kv.key == "/w/1");
  CHECK(seen[0].kv.value == "a");
  CHECK(seen[1].type == WatchEvent::Type::kDelete);
  CHECK((*w)->next_revision() == seen[1].kv.mod_revision + 1);
}

TEST_CASE("client: a reply over the bound fails the call, naming the bound", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto big = bed->Client();
  REQUIRE(big->Put("/big", std::string(8192, 'x')).ok());
  auto opts = bed->ClientOptions();
  opts.max_response_bytes = 1024;
  auto small = Client::Create(opts);
  REQUIRE(small.ok());
  auto r = (*small)->Get("/big");
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  CHECK(r.status().message() ==
        bed->endpoints()[0] + "/v3/kv/range: read: the reply is larger than 1024 bytes, the most accepted");
  CHECK((*small)->Put("/small", "ok").ok());  // the next call connects again
}

TEST_CASE("client: an endpoint that does not answer is passed over; when none does, each is named", "[etcd]") {
  auto bed = EtcdBed::Start(1);
  auto opts = bed->ClientOptions(2);
  const std::string dead = "https://127.0.0.1:" + std::to_string(testing::UnusedPort());
  opts.endpoints.insert(opts.endpoints.begin(), dead);
  auto c = Client::Create(opts);
  REQUIRE(c.ok());
  REQUIRE((*c)->Put("/x", "1").ok());
  CHECK((*c)->current_endpoint() == bed->endpoints()[0]);
  bed->member(0).Kill();
  auto r = (*c)->Get("/x");
  CHECK(r.status().code() == Status::Code::kUnavailable);
  CHECK(r.status().message() == "no etcd endpoint answered /v3/kv/range: " + bed->endpoints()[0] +
                                    "/v3/kv/range: connect: Connection refused; " + dead +
                                    "/v3/kv/range: connect: Connection refused");
}

TEST_CASE("client: bad endpoints and TLS files are named", "[etcd]") {
  CHECK(Client::Create(ClientOptions{{"nohost"}}).status().message() ==
        "etcd endpoint 'nohost': expected [http(s)://]HOST:PORT");
  CHECK(Client::Create(ClientOptions{{"h:99999"}}).status().message() ==
        "etcd endpoint 'h:99999': expected [http(s)://]HOST:PORT");
  ClientOptions o{{"127.0.0.1:2379"}};
  o.tls.ca_file = "/nonexistent/ca.crt";
  auto bad = Client::Create(o);
  CHECK(bad.status().code() == Status::Code::kInvalidArgument);
  CHECK(bad.status().message().rfind("etcd TLS CA file /nonexistent/ca.crt: ", 0) == 0);
  o.tls = TlsFiles{"", "/c.crt", ""};
  CHECK(Client::Create(o).status().message() ==
        "etcd TLS: a client certificate needs its key (certificate '/c.crt', key '')");
}

}  // namespace
}  // namespace ds::etcd
