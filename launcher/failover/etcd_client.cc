#include "launcher/failover/etcd_client.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace ds::etcd {
namespace {

// Worth trying the next endpoint: this one is unreachable, slow or has no leader.
bool TryNext(const Status& st) {
  return st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kTimeout;
}

// The decoder's error with the endpoint and path in front.
template <typename T>
Result<T> Named(Result<T> r, const std::string& where) {
  if (r.ok()) return r;
  return r.status().Prefixed(where);
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Create(const ClientOptions& options) {
  if (options.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoints given");
  std::unique_ptr<Client> c(new Client());
  std::shared_ptr<TlsContext> tls;
  if (!options.tls.empty()) {
    DS_ASSIGN_OR_RETURN(tls, LoadTls(options.tls));
  }
  const TransportLimits limits{options.timeout_s, options.max_response_bytes};
  for (const std::string& text : options.endpoints) {
    DS_ASSIGN_OR_RETURN(Endpoint ep, Endpoint::Parse(text, tls != nullptr));
    if (ep.tls && !tls) {
      DS_ASSIGN_OR_RETURN(tls, LoadTls(TlsFiles{}));  // https without files: the system's CAs
    }
    c->conns_.push_back(std::make_unique<EtcdConnection>(ep, tls, limits));
  }
  c->timeout_s_ = options.timeout_s;
  c->tls_ = tls;
  c->limits_ = limits;
  return c;
}

Client::~Client() = default;

std::string Client::current_endpoint() const { return conns_[current_]->endpoint().Url(); }

Result<std::string> Client::Call(const char* path, const std::string& body) {
  std::string reasons;
  for (size_t i = 0; i < conns_.size(); ++i) {
    const size_t at = (current_ + i) % conns_.size();
    Result<std::string> r = conns_[at]->Post(path, body);
    if (r.ok() || !TryNext(r.status())) {
      current_ = at;
      return r;
    }
    if (conns_.size() == 1) return r;
    reasons += (reasons.empty() ? "" : "; ") + r.status().message();
  }
  return Status::Unavailable(fmt::format("no etcd endpoint answered {}: {}", path, reasons));
}

Result<RangeResponse> Client::Range(const RangeRequest& r) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/kv/range", EncodeRange(r)));
  return Named(DecodeRange(body), current_endpoint() + "/v3/kv/range");
}

Result<std::optional<KeyValue>> Client::Get(const std::string& key, bool serializable) {
  RangeRequest q{key};
  q.serializable = serializable;
  DS_ASSIGN_OR_RETURN(RangeResponse r, Range(q));
  if (r.kvs.empty()) return std::optional<KeyValue>();
  return std::optional<KeyValue>(std::move(r.kvs.front()));
}

Result<int64_t> Client::Put(const std::string& key, const std::string& value, int64_t lease) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/kv/put", EncodePut(PutRequest{key, value, lease})));
  DS_ASSIGN_OR_RETURN(ResponseHeader h, Named(DecodeHeaderOnly(body), current_endpoint() + "/v3/kv/put"));
  return h.revision;
}

Result<int64_t> Client::Delete(const std::string& key, const std::string& range_end) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/kv/deleterange", EncodeDelete(DeleteRequest{key, range_end})));
  return Named(DecodeDeleted(body), current_endpoint() + "/v3/kv/deleterange");
}

Result<TxnResponse> Client::Txn(const TxnRequest& r) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/kv/txn", EncodeTxn(r)));
  return Named(DecodeTxn(body), current_endpoint() + "/v3/kv/txn");
}

Result<LeaseResponse> Client::LeaseGrant(int64_t ttl_s) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/grant", EncodeLeaseGrant(ttl_s)));
  return Named(DecodeLeaseGrant(body), current_endpoint() + "/v3/lease/grant");
}

Result<LeaseResponse> Client::LeaseKeepAlive(int64_t id) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/keepalive", EncodeLeaseId(id)));
  return Named(DecodeLeaseKeepAlive(body), current_endpoint() + "/v3/lease/keepalive");
}

Status Client::LeaseRevoke(int64_t id) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/lease/revoke", EncodeLeaseId(id)));
  return Named(DecodeHeaderOnly(body), current_endpoint() + "/v3/lease/revoke").status();
}

Result<MembersResponse> Client::MemberList() {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/cluster/member/list", "{}"));
  return Named(DecodeMembers(body), current_endpoint() + "/v3/cluster/member/list");
}

Result<MembersResponse> Client::MemberAdd(const std::vector<std::string>& peer_urls) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/cluster/member/add", EncodeMemberAdd(peer_urls)));
  return Named(DecodeMembers(body), current_endpoint() + "/v3/cluster/member/add");
}

Result<MembersResponse> Client::MemberRemove(uint64_t id) {
  DS_ASSIGN_OR_RETURN(std::string body, Call("/v3/cluster/member/remove", EncodeMemberId(id)));
  return Named(DecodeMembers(body), current_endpoint() + "/v3/cluster/member/remove");
}

Result<size_t> Client::LearnEndpoints() {
  DS_ASSIGN_OR_RETURN(MembersResponse list, MemberList());
  size_t added = 0;
  for (const Member& m : list.members)
    for (const std::string& url : m.client_urls) {
      Result<Endpoint> ep = Endpoint::Parse(url, tls_ != nullptr);
      if (!ep.ok()) continue;  // a member's odd URL is no reason to fail the call
      const bool known = std::any_of(conns_.begin(), conns_.end(),
                                     [&](const auto& c) { return c->endpoint().Url() == ep->Url(); });
      if (known || (ep->tls && !tls_)) continue;
      conns_.push_back(std::make_unique<EtcdConnection>(*ep, tls_, limits_));
      ++added;
    }
  return added;
}

Result<std::unique_ptr<Watch>> Client::WatchKey(const WatchRequest& r) {
  std::string reasons;
  for (size_t i = 0; i < conns_.size(); ++i) {
    const size_t at = (current_ + i) % conns_.size();
    auto stream = conns_[at]->OpenStream("/v3/watch", EncodeWatchCreate(r));
    if (stream.ok() || !TryNext(stream.status())) {
      if (!stream.ok()) return stream.status();
      current_ = at;
      return std::make_unique<Watch>(std::move(stream).value());
    }
    reasons += (reasons.empty() ? "" : "; ") + stream.status().message();
  }
  return Status::Unavailable(fmt::format("no etcd endpoint answered /v3/watch: {}", reasons));
}

Result<WatchResponse> Watch::Next(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    DS_ASSIGN_OR_RETURN(std::string msg, stream_->Next(left > 0 ? left : 0));
    DS_ASSIGN_OR_RETURN(WatchResponse r, DecodeWatch(msg));
    if (r.canceled)
      return Status::Aborted(fmt::format("etcd canceled the watch: {} (compacted at revision {})",
                                         r.cancel_reason.empty() ? "no reason given" : r.cancel_reason,
                                         r.compact_revision));
    if (r.events.empty()) continue;  // the creation reply, or a progress note
    next_revision_ = r.events.back().kv.mod_revision + 1;
    return r;
  }
}

}  // namespace ds::etcd
