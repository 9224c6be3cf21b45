#include "launcher/failover/state_store.h"

#include <utility>

#include <fmt/format.h>

namespace ds::failover {

StateStore::StateStore(etcd::Client& client, std::string state_key, std::string leader_key)
    : client_(client), state_key_(std::move(state_key)), leader_key_(std::move(leader_key)) {}

Result<int64_t> StateStore::Write(const std::string& text, int64_t token) {
  if (text.size() > kMaxBytes)
    return Status::InvalidArgument(
        fmt::format("{}: the job's state is {} bytes, more than the {} a write may carry", state_key_, text.size(),
                    kMaxBytes));
  if (token <= 0) return Status::Aborted(fmt::format("{}: not the leader (no fencing token)", state_key_));
  etcd::TxnRequest txn;
  txn.compare.push_back(
      etcd::Compare{leader_key_, etcd::Compare::Target::kCreate, etcd::Compare::Op::kEqual, token, ""});
  txn.success.push_back(etcd::PutRequest{state_key_, text, 0});
  txn.failure.push_back(etcd::RangeRequest{leader_key_, "", 0, 0});  // who leads instead, for the message
  DS_ASSIGN_OR_RETURN(etcd::TxnResponse r, client_.Txn(txn));
  if (r.succeeded) return r.header.revision;
  std::string holder = "nobody leads";
  if (!r.responses.empty() && !r.responses[0].range.kvs.empty()) {
    const etcd::KeyValue& kv = r.responses[0].range.kvs[0];
    holder = fmt::format("{} leads with token {}", kv.value, kv.create_revision);
  }
  return Status::Aborted(fmt::format("{}: not the leader with fencing token {} ({}): the state was not written",
                                     state_key_, token, holder));
}

Result<std::optional<StoredState>> StateStore::Read(bool serializable) {
  DS_ASSIGN_OR_RETURN(std::optional<etcd::KeyValue> kv, client_.Get(state_key_, serializable));
  if (!kv) return std::optional<StoredState>();
  return std::optional<StoredState>(StoredState{std::move(kv->value), kv->mod_revision});
}

}  // namespace ds::failover
