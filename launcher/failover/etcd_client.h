// An etcd v3 client over the JSON gateway (Boost.Beast; no generated code,
// no gRPC): the key/value calls, transactions, leases and watches the
// coordinator's failover needs, against several endpoints with failover:
// a call goes to the endpoint that answered last and, when that one cannot
// be reached or has no leader (Unavailable, Timeout), to the next, in order;
// any other answer (a refused compare is a reply, not an error; a lease
// that is gone is NotFound) is returned as it is. Every error names the
// endpoint and the path ("https://10.0.0.2:2379/v3/kv/txn: connect:
// Connection refused"); when all fail, each one's reason is listed.
//
// Why the gateway and not grpc++: Debian's etcd serves it on the same TLS
// port, and a POST of JSON needs only Boost (header-only) and OpenSSL, both
// linked already; grpc++ would add protoc-generated code and a library
// stack for six calls. The price: one HTTP request per call (connections
// are kept alive), and a watch is a streamed reply.
//
// A call that timed out after it was sent may have been applied: the retry
// on the next endpoint then meets the effect (callers use transactions with
// compares, as the election does). Blocking; not thread-safe: one thread
// per client.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/failover/etcd_json.h"
#include "launcher/failover/etcd_transport.h"

namespace ds::etcd {

struct ClientOptions {
  std::vector<std::string> endpoints;  // "https://10.0.0.1:2379" or "10.0.0.1:2379" (https with TLS files)
  TlsFiles tls;                        // all empty: plain http
  double timeout_s = 5;                // per call and endpoint, connecting included
  size_t max_response_bytes = 4u << 20;  // a larger reply (or watch message) fails the call
};

class Watch;

class Client {
 public:
  // Parses the endpoints and loads the TLS files (no connection yet).
  // InvalidArgument naming the endpoint or the file.
  static Result<std::unique_ptr<Client>> Create(const ClientOptions& options);
  ~Client();

  Result<RangeResponse> Range(const RangeRequest& r);
  // The key's value and revisions; nullopt when there is no such key.
  // `serializable`: the first member that answers says what it has, without
  // a quorum (a member whose peers are gone still answers; maybe stale).
  Result<std::optional<KeyValue>> Get(const std::string& key, bool serializable = false);
  // The revision the put made.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // How many keys went.
  Result<int64_t> Delete(const std::string& key, const std::string& range_end = "");
  // The transaction's reply: `succeeded` says which branch ran.
  Result<TxnResponse> Txn(const TxnRequest& r);
  // A new lease of `ttl_s` seconds (etcd may raise it to its minimum).
  Result<LeaseResponse> LeaseGrant(int64_t ttl_s);
  // Renews the lease: its TTL; a ttl of 0 when it is gone (expired, revoked).
  Result<LeaseResponse> LeaseKeepAlive(int64_t id);
  // Revokes the lease (its keys are deleted); NotFound when already gone.
  Status LeaseRevoke(int64_t id);
  // The cluster's members (any member answers: a member list needs no
  // quorum), a new member at `peer_urls` (it must then start with
  // --initial-cluster-state existing), and a member removed by its id: each
  // the members after it. Add and remove need a quorum; etcd refuses to
  // remove a member when what remains would have none.
  Result<MembersResponse> MemberList();
  Result<MembersResponse> MemberAdd(const std::vector<std::string>& peer_urls);
  Result<MembersResponse> MemberRemove(uint64_t id);
  // Adds every member's client URL this client does not know yet (the
  // cluster grew: a replaced member), so that it still reaches the cluster
  // once the members it started with are gone; none is dropped (a lost one
  // is passed over). How many it added.
  Result<size_t> LearnEndpoints();
  // Watches a key (or a range) from `start_revision`: the stream is opened
  // on the first endpoint that answers.
  Result<std::unique_ptr<Watch>> WatchKey(const WatchRequest& r);

  // The endpoint the last call went to (for messages).
  std::string current_endpoint() const;

 private:
  Client() = default;
  Result<std::string> Call(const char* path, const std::string& body);

  std::vector<std::unique_ptr<EtcdConnection>> conns_;
  std::shared_ptr<TlsContext> tls_;  // for the endpoints learned later
  TransportLimits limits_;
  size_t current_ = 0;
  double timeout_s_ = 5;
};

// A watch: events in the order etcd made them. Not thread-safe.
class Watch {
 public:
  explicit Watch(std::unique_ptr<EtcdStream> stream) : stream_(std::move(stream)) {}
  // The next reply with events (the creation reply is skipped), waiting up
  // to `timeout_s`: Timeout when none came (the watch stays open);
  // Aborted when etcd canceled the watch (compacted: its reason);
  // Unavailable when the stream broke (open a new watch from
  // next_revision()).
  Result<WatchResponse> Next(double timeout_s);
  // The revision to resume from: one past the last event seen.
  int64_t next_revision() const { return next_revision_; }

 private:
  std::unique_ptr<EtcdStream> stream_;
  int64_t next_revision_ = 0;
};

}  // namespace ds::etcd
