#include "launcher/failover/replica_brief.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ds::failover {
namespace {

using Json = nlohmann::json;

constexpr int kHeartbeatMs = 100;
constexpr int kElectionMs = 1000;

// The options' part that says where `m` listens (for PeerUrl, ClientUrl).
EmbeddedEtcdOptions Where(const ReplicaMember& m) {
  EmbeddedEtcdOptions o;
  o.ip = m.ip;
  o.client_port = m.client_port;
  o.peer_port = m.peer_port;
  return o;
}

}  // namespace

std::string EncodeBrief(const ReplicaBrief& b) {
  Json members = Json::array();
  for (const ReplicaMember& m : b.members)
    members.push_back({{"name", m.name}, {"ip", m.ip}, {"client_port", m.client_port}, {"peer_port", m.peer_port}});
  return Json{{"index", b.index},
              {"members", members},
              {"cluster_token", b.cluster_token},
              {"ca", b.ca_pem},
              {"ca_key", b.ca_key_pem},
              {"join_existing", b.join_existing},
              {"member_cert", b.member.cert_pem},
              {"member_key", b.member.key_pem},
              {"client_cert", b.client.cert_pem},
              {"client_key", b.client.key_pem}}
      .dump();
}

Result<ReplicaBrief> DecodeBrief(const std::string& line) {
  const Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::InvalidArgument("coordinator.replicas: the standby's brief is not a JSON object");
  ReplicaBrief b;
  try {
    b.index = j.at("index").get<int>();
    for (const Json& m : j.at("members"))
      b.members.push_back({m.at("name").get<std::string>(), m.at("ip").get<std::string>(),
                           m.at("client_port").get<int>(), m.at("peer_port").get<int>()});
    b.cluster_token = j.at("cluster_token").get<std::string>();
    b.ca_pem = j.at("ca").get<std::string>();
    b.ca_key_pem = j.at("ca_key").get<std::string>();
    b.join_existing = j.at("join_existing").get<bool>();
    b.member = {j.at("member_cert").get<std::string>(), j.at("member_key").get<std::string>()};
    b.client = {j.at("client_cert").get<std::string>(), j.at("client_key").get<std::string>()};
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(fmt::format("coordinator.replicas: the standby's brief: {}", e.what()));
  }
  if (b.index < 0 || static_cast<size_t>(b.index) >= b.members.size())
    return Status::InvalidArgument(
        fmt::format("coordinator.replicas: the standby's brief names member {} of {}", b.index, b.members.size()));
  return b;
}

std::string PeerUrl(const ReplicaMember& m) { return PeerUrl(Where(m)); }
std::string ClientUrl(const ReplicaMember& m) { return ClientUrl(Where(m)); }

std::string InitialCluster(const std::vector<ReplicaMember>& members) {
  std::string out;
  for (const ReplicaMember& m : members) out += (out.empty() ? "" : ",") + m.name + "=" + PeerUrl(m);
  return out;
}

std::vector<std::string> ClientEndpoints(const std::vector<ReplicaMember>& members) {
  std::vector<std::string> out;
  for (const ReplicaMember& m : members) out.push_back(ClientUrl(m));
  return out;
}

EmbeddedEtcdOptions MemberOptions(const ReplicaBrief& b, const std::string& data_dir, const TlsPaths& tls) {
  const ReplicaMember& m = b.members[static_cast<size_t>(b.index)];
  EmbeddedEtcdOptions o = Where(m);
  o.name = m.name;
  o.data_dir = data_dir;
  o.initial_cluster = InitialCluster(b.members);
  o.cluster_token = b.cluster_token;
  o.join_existing = b.join_existing;
  o.ca_file = tls.ca_file;
  o.cert_file = tls.cert_file;
  o.key_file = tls.key_file;
  o.heartbeat_ms = kHeartbeatMs;
  o.election_ms = kElectionMs;
  return o;
}

}  // namespace ds::failover
