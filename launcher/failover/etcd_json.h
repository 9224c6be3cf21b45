// The JSON shapes of etcd's v3 gateway (the grpc-gateway in front of etcd's
// gRPC API, served on the client URLs under /v3/...; etcd 3.4 and later):
// requests encoded, replies decoded, keys and values base64 as the gateway
// wants them, int64 fields written as strings and read as strings or
// numbers, fields the gateway leaves out when zero or false read as zero or
// false. Pure functions over value types: no I/O, thread-safe.
//
// Decoders return InvalidArgument naming the field and what was expected,
// e.g. "etcd reply: header.revision: expected an integer, got true"; the
// client prefixes the endpoint and the path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"

namespace ds::etcd {

// Standard base64 (RFC 4648, with padding), as protobuf's JSON mapping writes bytes.
std::string Base64Encode(std::string_view bytes);
// Decodes it strictly (padding required, no whitespace); InvalidArgument
// "<what>: invalid base64 at byte N".
Result<std::string> Base64Decode(std::string_view text, std::string_view what);

// The range_end that selects every key starting with `prefix` (the prefix
// with its last byte below 0xff incremented, the rest dropped); "\0" (every
// key) when the prefix is empty or all 0xff bytes.
std::string PrefixEnd(std::string_view prefix);

struct ResponseHeader {
  int64_t revision = 0;  // the store's revision when the request was served
  uint64_t member_id = 0;
  int64_t raft_term = 0;
};

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct RangeRequest {
  std::string key;
  std::string range_end;  // "" = the one key; PrefixEnd(key) = the prefix
  int64_t limit = 0;      // 0 = no limit
  int64_t revision = 0;   // 0 = the newest
  bool serializable = false;  // answered by the member alone, no quorum asked: maybe stale
};
struct RangeResponse {
  ResponseHeader header;
  std::vector<KeyValue> kvs;
  int64_t count = 0;
  bool more = false;
};

struct PutRequest {
  std::string key, value;
  int64_t lease = 0;  // 0 = no lease
};
struct DeleteRequest {
  std::string key;
  std::string range_end;
};

// One compare of a transaction: the key's create/mod revision, version or
// value against a number or bytes.
struct Compare {
  enum class Target { kVersion, kCreate, kMod, kValue };
  enum class Op { kEqual, kGreater, kLess, kNotEqual };
  std::string key;
  Target target = Target::kCreate;
  Op op = Op::kEqual;
  int64_t number = 0;  // for kVersion, kCreate, kMod
  std::string value;   // for kValue
};

using TxnOp = std::variant<RangeRequest, PutRequest, DeleteRequest>;
struct TxnRequest {
  std::vector<Compare> compare;
  std::vector<TxnOp> success, failure;
};
// What one op of the branch taken returned: a range's reply, or a put's or
// delete's (their header only; `deleted` for a delete).
struct TxnOpResponse {
  enum class Kind { kRange, kPut, kDelete } kind = Kind::kPut;
  RangeResponse range;
  int64_t deleted = 0;
};
struct TxnResponse {
  ResponseHeader header;
  bool succeeded = false;
  std::vector<TxnOpResponse> responses;
};

struct LeaseResponse {
  ResponseHeader header;
  int64_t id = 0;
  int64_t ttl = 0;  // keepalive: 0 when the lease is gone (expired or revoked)
};

struct WatchRequest {
  std::string key;
  std::string range_end;
  int64_t start_revision = 0;  // 0 = from now
};
struct WatchEvent {
  enum class Type { kPut, kDelete } type = Type::kPut;
  KeyValue kv;
};
struct WatchResponse {
  ResponseHeader header;
  int64_t watch_id = 0;
  bool created = false, canceled = false;
  int64_t compact_revision = 0;
  std::string cancel_reason;
  std::vector<WatchEvent> events;
};

// A member of the cluster (/v3/cluster/member/...). One just added has no
// name and no client URLs until it starts.
struct Member {
  uint64_t id = 0;
  std::string name;
  std::vector<std::string> peer_urls, client_urls;
};
struct MembersResponse {
  ResponseHeader header;
  std::vector<Member> members;  // the cluster's, after the call
  Member added;                 // member/add: the new one
};

// An error reply of the gateway: {"error": ..., "code": <gRPC code>}.
struct GatewayError {
  int code = 0;  // gRPC status code (3 invalid argument, 5 not found, 14 unavailable, ...)
  std::string message;
};

std::string EncodeRange(const RangeRequest& r);
std::string EncodePut(const PutRequest& r);
std::string EncodeDelete(const DeleteRequest& r);
std::string EncodeTxn(const TxnRequest& r);
std::string EncodeLeaseGrant(int64_t ttl_s, int64_t id = 0);  // id 0: etcd picks
std::string EncodeLeaseId(int64_t id);                        // keepalive, revoke
std::string EncodeWatchCreate(const WatchRequest& r);
std::string EncodeMemberAdd(const std::vector<std::string>& peer_urls);
std::string EncodeMemberId(uint64_t id);  // member/remove

Result<RangeResponse> DecodeRange(std::string_view body);
Result<ResponseHeader> DecodeHeaderOnly(std::string_view body);  // put, lease revoke
Result<int64_t> DecodeDeleted(std::string_view body);           // delete: how many keys went
Result<TxnResponse> DecodeTxn(std::string_view body);
Result<LeaseResponse> DecodeLeaseGrant(std::string_view body);
// The keepalive stream's message: {"result": {...}}.
Result<LeaseResponse> DecodeLeaseKeepAlive(std::string_view body);
// One message of the watch stream: {"result": {...}}, or {"error": ...} as
// a Status (Unavailable, naming etcd's reason).
Result<WatchResponse> DecodeWatch(std::string_view body);
// member/list, member/add (with `added`) and member/remove.
Result<MembersResponse> DecodeMembers(std::string_view body);
// The gateway's error reply, when `body` is one.
std::optional<GatewayError> DecodeError(std::string_view body);

}  // namespace ds::etcd
