// The gateway's JSON shapes: requests as etcd 3.4 takes them, replies as it
// writes them (copied from a real etcd 3.4.23: int64 as strings, zero and
// false fields left out, PUT events without a type), and bad replies named
// field by field.
#include "launcher/failover/etcd_json.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace ds::etcd {
namespace {

using nlohmann::json;

TEST_CASE("base64: round trips every length and byte, and refuses what is not base64", "[unit]") {
  CHECK(Base64Encode("") == "");
  CHECK(Base64Encode("f") == "Zg==");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK(Base64Encode("foo") == "Zm9v");
  CHECK(Base64Encode("foob") == "Zm9vYg==");
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(char(i));
  for (size_t n = 0; n < all.size(); n += 7) {
    const std::string part = all.substr(0, n);
    auto back = Base64Decode(Base64Encode(part), "x");
    REQUIRE(back.ok());
    CHECK(*back == part);
  }
  CHECK(Base64Decode("Zm9", "kvs[0].key").status().message() ==
        "kvs[0].key: invalid base64 at byte 3 (length not a multiple of 4)");
  CHECK(Base64Decode("Zm!v", "key").status().message() == "key: invalid base64 at byte 2");
  CHECK(Base64Decode("Z===", "key").status().message() == "key: invalid base64 at byte 1");
  CHECK(Base64Decode("Zg==Zg==", "key").status().message() == "key: invalid base64 at byte 2");
}

TEST_CASE("PrefixEnd: the range of a prefix", "[unit]") {
  CHECK(PrefixEnd("/dslaunch/j1/") == "/dslaunch/j10");
  CHECK(PrefixEnd(std::string("a\xff", 2)) == "b");
  CHECK(PrefixEnd(std::string("\xff\xff", 2)) == std::string(1, '\0'));
  CHECK(PrefixEnd("") == std::string(1, '\0'));
}

TEST_CASE("requests: keys and values base64, int64 as strings, zero fields left out", "[unit]") {
  CHECK(json::parse(EncodeRange(RangeRequest{"foo"})) == json{{"key", "Zm9v"}});
  CHECK(json::parse(EncodeRange(RangeRequest{"a", "b", 10, 7})) ==
        json{{"key", "YQ=="}, {"range_end", "Yg=="}, {"limit", "10"}, {"revision", "7"}});
  CHECK(json::parse(EncodePut(PutRequest{"k", "v", 42})) == json{{"key", "aw=="}, {"value", "dg=="}, {"lease", "42"}});
  CHECK(json::parse(EncodeLeaseGrant(3)) == json{{"TTL", "3"}, {"ID", "0"}});
  CHECK(json::parse(EncodeLeaseId(-5)) == json{{"ID", "-5"}});
  CHECK(json::parse(EncodeWatchCreate(WatchRequest{"k", "", 9})) ==
        json{{"create_request", {{"key", "aw=="}, {"start_revision", "9"}}}});
}

TEST_CASE("txn: a compare on the create revision, a put with a lease, a range on failure", "[unit]") {
  TxnRequest t;
  t.compare.push_back(Compare{"/l", Compare::Target::kCreate, Compare::Op::kEqual, 0, ""});
  t.compare.push_back(Compare{"/v", Compare::Target::kValue, Compare::Op::kNotEqual, 0, "x"});
  t.success.push_back(PutRequest{"/l", "me", 7});
  t.failure.push_back(RangeRequest{"/l"});
  t.failure.push_back(DeleteRequest{"/o", "/p"});
  CHECK(json::parse(EncodeTxn(t)) ==
        json::parse(R"({"compare":[{"key":"L2w=","target":"CREATE","result":"EQUAL","create_revision":"0"},
                                  {"key":"L3Y=","target":"VALUE","result":"NOT_EQUAL","value":"eA=="}],
                       "success":[{"request_put":{"key":"L2w=","value":"bWU=","lease":"7"}}],
                       "failure":[{"request_range":{"key":"L2w="}},
                                  {"request_delete_range":{"key":"L28=","range_end":"L3A="}}]})"));
}

TEST_CASE("replies of etcd 3.4.23, as it writes them", "[unit]") {
  auto range = DecodeRange(
      R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","revision":"2","raft_term":"2"},)"
      R"("kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}],"count":"1"})");
  REQUIRE(range.ok());
  CHECK(range->header.revision == 2);
  CHECK(range->header.member_id == 13668033151171901709ull);
  REQUIRE(range->kvs.size() == 1);
  CHECK(range->kvs[0].key == "foo");
  CHECK(range->kvs[0].value == "bar");
  CHECK(range->kvs[0].create_revision == 2);
  CHECK(range->kvs[0].lease == 0);
  auto none = DecodeRange(R"({"header":{"revision":"2"}})");
  REQUIRE(none.ok());
  CHECK(none->kvs.empty());
  CHECK(none->count == 0);

  auto failed = DecodeTxn(R"({"header":{"revision":"2"},"responses":[{"response_range":{"header":{"revision":"2"},)"
                          R"("kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}],"count":"1"}}]})");
  REQUIRE(failed.ok());
  CHECK_FALSE(failed->succeeded);  // left out when false
  REQUIRE(failed->responses.size() == 1);
  CHECK(failed->responses[0].kind == TxnOpResponse::Kind::kRange);
  CHECK(failed->responses[0].range.kvs[0].value == "bar");
  auto won = DecodeTxn(R"({"header":{"revision":"5"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"5"}}}]})");
  REQUIRE(won.ok());
  CHECK(won->succeeded);
  CHECK(won->responses[0].kind == TxnOpResponse::Kind::kPut);

  auto grant = DecodeLeaseGrant(R"({"header":{"revision":"2"},"ID":"4111120388491208199","TTL":"5"})");
  REQUIRE(grant.ok());
  CHECK(grant->id == 4111120388491208199);
  CHECK(grant->ttl == 5);
  auto alive = DecodeLeaseKeepAlive(R"({"result":{"header":{"revision":"2"},"ID":"4111120388491208203","TTL":"5"}})");
  REQUIRE(alive.ok());
  CHECK(alive->ttl == 5);
  auto gone = DecodeLeaseKeepAlive(R"({"result":{"header":{"revision":"4"},"ID":"4111120388491208203"}})");
  REQUIRE(gone.ok());
  CHECK(gone->ttl == 0);  // revoked: TTL left out
}

TEST_CASE("member replies of etcd 3.4.23: the list, an added member (no name, no client URLs yet)", "[unit]") {
  CHECK(EncodeMemberAdd({"https://10.0.0.4:24001"}) == R"({"peerURLs":["https://10.0.0.4:24001"]})");
  CHECK(EncodeMemberId(14978749610864771740u) == R"({"ID":"14978749610864771740"})");
  auto added = DecodeMembers(
      R"({"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","raft_term":"2"},)"
      R"("member":{"ID":"14978749610864771740","peerURLs":["http://127.0.0.1:23802"]},)"
      R"("members":[{"ID":"13668033151171901709","name":"m0","peerURLs":["http://127.0.0.1:23801"],)"
      R"("clientURLs":["http://127.0.0.1:23791"]},{"ID":"14978749610864771740","peerURLs":["http://127.0.0.1:23802"]}]})");
  INFO(added.status().message());
  REQUIRE(added.ok());
  REQUIRE(added->members.size() == 2);
  CHECK(added->members[0].id == 13668033151171901709u);
  CHECK(added->members[0].name == "m0");
  CHECK(added->members[0].client_urls == std::vector<std::string>{"http://127.0.0.1:23791"});
  CHECK(added->members[1].name.empty());
  CHECK(added->members[1].client_urls.empty());
  CHECK(added->added.id == 14978749610864771740u);
  CHECK(added->added.peer_urls == std::vector<std::string>{"http://127.0.0.1:23802"});
  CHECK(DecodeMembers(R"({"members":[{"ID":"1","peerURLs":"x"}]})").status().message() ==
        "etcd reply: members[0].peerURLs: expected a list of text, got \"x\"");
}

TEST_CASE("watch messages: creation, a PUT without a type, a DELETE, a cancel", "[unit]") {
  auto created = DecodeWatch(R"({"result":{"header":{"revision":"3"},"created":true}})");
  REQUIRE(created.ok());
  CHECK(created->created);
  CHECK(created->events.empty());
  auto events = DecodeWatch(
      R"({"result":{"header":{"revision":"4"},"events":[{"kv":{"key":"bGw=","create_revision":"4","mod_revision":"4","version":"1","value":"eA=="}},)"
      R"({"type":"DELETE","kv":{"key":"bGw=","mod_revision":"5"}}]}})");
  REQUIRE(events.ok());
  REQUIRE(events->events.size() == 2);
  CHECK(events->events[0].type == WatchEvent::Type::kPut);
  CHECK(events->events[0].kv.value == "x");
  CHECK(events->events[1].type == WatchEvent::Type::kDelete);
  CHECK(events->events[1].kv.mod_revision == 5);
  auto canceled = DecodeWatch(R"({"result":{"canceled":true,"compact_revision":"9","cancel_reason":"compacted"}})");
  REQUIRE(canceled.ok());
  CHECK(canceled->canceled);
  CHECK(canceled->compact_revision == 9);
  CHECK(DecodeWatch(R"({"error":{"grpc_code":14,"message":"etcdserver: no leader"}})").status().message() ==
        "etcd stream error: etcdserver: no leader");
}

TEST_CASE("bad replies are named field by field", "[unit]") {
  CHECK(DecodeRange("<html>").status().message() == "etcd reply: not JSON: '<html>'");
  CHECK(DecodeRange("[1]").status().message() == "etcd reply: reply: expected an object, got [1]");
  CHECK(DecodeRange(R"({"header":{"revision":true}})").status().message() ==
        "etcd reply: header.revision: expected an integer, got true");
  CHECK(DecodeRange(R"({"kvs":[{"key":"%%%%"}]})").status().message() ==
        "etcd reply: kvs[0].key: invalid base64 at byte 0");
  CHECK(DecodeRange(R"({"kvs":{}})").status().message() == "etcd reply: kvs: expected an array, got {}");
  CHECK(DecodeTxn(R"({"succeeded":"yes"})").status().message() == "etcd reply: succeeded: expected true or false, got \"yes\"");
  CHECK(DecodeTxn(R"({"responses":[{"response_what":{}}]})").status().message() ==
        "etcd reply: responses[0]: expected response_range, response_put or response_delete_range, got "
        "{\"response_what\":{}}");
  CHECK(DecodeLeaseKeepAlive(R"({"header":{}})").status().message() == "etcd reply: result: missing");
  CHECK(DecodeLeaseGrant(R"({"header":{}})").status().message() == "etcd reply: ID: missing (no lease granted)");
  CHECK(DecodeWatch(R"({"result":{"events":[{"type":"MOVE","kv":{}}]}})").status().message() ==
        "etcd reply: result.events[0].type: expected PUT or DELETE, got \"MOVE\"");
}

TEST_CASE("gateway errors: the gRPC code and etcd's words", "[unit]") {
  auto e = DecodeError(R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  REQUIRE(e);
  CHECK(e->code == 5);
  CHECK(e->message == "etcdserver: requested lease not found");
  CHECK_FALSE(DecodeError(R"({"header":{}})"));
  CHECK_FALSE(DecodeError("not json"));
}

}  // namespace
}  // namespace ds::etcd
