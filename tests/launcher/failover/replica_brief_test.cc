// A standby's brief (coordinator.replicas): one line of JSON that comes back
// as it went, a replacement's "join the existing members" included, and a
// brief with a field missing or a member index out of range is named.
#include "launcher/failover/replica_brief.h"

#include <catch2/catch.hpp>

namespace ds::failover {
namespace {

ReplicaBrief Sample(bool join_existing) {
  return {2,
          {{"m0", "10.0.0.1", 21000, 21001}, {"m2", "10.0.0.3", 23000, 23001}, {"m3", "10.0.0.4", 24000, 24001}},
          "job1",
          "CA PEM",
          "CA KEY PEM",
          join_existing,
          {"MEMBER CERT", "MEMBER KEY"},
          {"CLIENT CERT", "CLIENT KEY"}};
}

TEST_CASE("replica brief: a replacement's brief comes back as it went, and its member joins the others", "[unit]") {
  const std::string line = EncodeBrief(Sample(true));
  CHECK(line.find('\n') == std::string::npos);
  auto b = DecodeBrief(line);
  INFO(b.status().message());
  REQUIRE(b.ok());
  CHECK(b->index == 2);
  CHECK(b->members.size() == 3);
  CHECK(b->members[2].name == "m3");
  CHECK(b->ca_key_pem == "CA KEY PEM");
  CHECK(b->join_existing);
  const EmbeddedEtcdOptions o = MemberOptions(*b, "/d", {"/t", "/t/ca.crt", "/t/member.crt", "/t/member.key"});
  CHECK(o.name == "m3");
  CHECK(o.join_existing);
  CHECK(o.initial_cluster ==
        "m0=https://10.0.0.1:21001,m2=https://10.0.0.3:23001,m3=https://10.0.0.4:24001");
  CHECK(PeerUrl(b->members[2]) == "https://10.0.0.4:24001");
  CHECK(ClientUrl(b->members[2]) == "https://10.0.0.4:24000");
  auto first = DecodeBrief(EncodeBrief(Sample(false)));
  REQUIRE(first.ok());
  CHECK_FALSE(first->join_existing);
}

TEST_CASE("replica brief: a field missing or a member out of range is named", "[unit]") {
  std::string line = EncodeBrief(Sample(true));
  const std::string no_key = line.substr(0, line.find("\"ca_key\"")) + line.substr(line.find("\"client_cert\""));
  auto missing = DecodeBrief(no_key);
  CHECK_FALSE(missing.ok());
  CHECK(missing.status().message().find("coordinator.replicas: the standby's brief: ") == 0);
  ReplicaBrief out = Sample(true);
  out.index = 3;
  CHECK(DecodeBrief(EncodeBrief(out)).status().message() ==
        "coordinator.replicas: the standby's brief names member 3 of 3");
  CHECK(DecodeBrief("not json").status().message() == "coordinator.replicas: the standby's brief is not a JSON object");
}

}  // namespace
}  // namespace ds::failover
