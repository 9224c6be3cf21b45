#include "launcher/join/per_node_launch.h"

#include <netdb.h>

#include <fmt/format.h>

#include "common/files.h"
#include "common/netif.h"
#include "common/strings.h"
#include "wire/hmac_auth.h"

namespace ds {
namespace {

std::string Derive(const std::string& secret, const std::string& what) {
  const std::string s = what;
  return HexEncode(HmacSha256(secret, Bytes(s.begin(), s.end())));
}

}  // namespace

std::string PerNodeJobId(const std::string& endpoint, const std::string& rdzv_id) {
  // The id names the job (from the rendezvous only, so that a wrong secret
  // fails the key check and says so); the agents' key needs the secret.
  return Derive("dslaunch per-node job", rdzv_id.empty() ? endpoint : endpoint + " " + rdzv_id).substr(0, 12);
}

Result<std::string> ReadSecretFile(const std::string& path) {
  DS_ASSIGN_OR_RETURN(std::string secret, ReadPrivateLine(path, "DSLAUNCH_SECRET_FILE=" + path));
  if (secret.size() < 16)
    return Status::InvalidArgument(fmt::format(
        "DSLAUNCH_SECRET_FILE={}: expected a secret of at least 16 characters on its first line (e.g. openssl "
        "rand -hex 32)", path));
  return secret;
}

std::string PerNodeJoinToken(const PerNodeLaunch& p) {
  return Derive(p.secret, fmt::format("dslaunch per-node join {}", p.job_id));
}

std::string PerNodeAgentToken(const PerNodeLaunch& p, int node) {
  return Derive(p.secret, fmt::format("dslaunch per-node agent {} {}", p.job_id, node));
}

Result<std::string> PerNodeListenAddress(const PerNodeLaunch& p) {
  if (p.addr == "localhost") return std::string("127.0.0.1");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = ::getaddrinfo(p.addr.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    return Status::InvalidArgument(fmt::format("node 0's rendezvous address {}: {}", p.addr, ::gai_strerror(rc)));
  std::string numeric = AddressString(res->ai_addr);
  ::freeaddrinfo(res);
  return numeric;
}

}  // namespace ds
