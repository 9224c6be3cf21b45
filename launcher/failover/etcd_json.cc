#include "launcher/failover/etcd_json.h"

#include <array>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ds::etcd {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

Status BadField(std::string_view field, std::string_view expected, const json& got) {
  return Status::InvalidArgument(fmt::format("etcd reply: {}: expected {}, got {}", field, expected, got.dump()));
}

// An int64 field: the gateway writes them as strings; numbers are accepted too.
Result<int64_t> IntField(const json& obj, const char* name, std::string_view path) {
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return int64_t{0};
  const std::string field = fmt::format("{}{}", path, name);
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) return static_cast<int64_t>(it->get<uint64_t>());
  if (!it->is_string()) return BadField(field, "an integer", *it);
  const std::string& s = it->get_ref<const std::string&>();
  int64_t v = 0;
  uint64_t u = 0;  // member ids use the whole unsigned range
  const char* end = s.data() + s.size();
  if (auto r = std::from_chars(s.data(), end, v); r.ec == std::errc() && r.ptr == end) return v;
  if (auto r = std::from_chars(s.data(), end, u); r.ec == std::errc() && r.ptr == end) return static_cast<int64_t>(u);
  return BadField(field, "an integer", *it);
}

Result<bool> BoolField(const json& obj, const char* name, std::string_view path) {
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) return BadField(fmt::format("{}{}", path, name), "true or false", *it);
  return it->get<bool>();
}

Result<std::string> BytesField(const json& obj, const char* name, std::string_view path) {
  const auto it = obj.find(name);
  const std::string field = fmt::format("{}{}", path, name);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return BadField(field, "base64 text", *it);
  return Base64Decode(it->get_ref<const std::string&>(), "etcd reply: " + field);
}

Result<const json*> ObjectField(const json& obj, const char* name, std::string_view path, bool required) {
  static const json kEmpty = json::object();
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) {
    if (required) return Status::InvalidArgument(fmt::format("etcd reply: {}{}: missing", path, name));
    return &kEmpty;
  }
  if (!it->is_object()) return BadField(fmt::format("{}{}", path, name), "an object", *it);
  return &*it;
}

Result<json> ParseObject(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    const std::string shown(body.substr(0, 80));
    return Status::InvalidArgument(fmt::format("etcd reply: not JSON: '{}'", shown));
  }
  if (!j.is_object()) return BadField("reply", "an object", j);
  return j;
}

Result<ResponseHeader> Header(const json& obj, std::string_view path) {
  DS_ASSIGN_OR_RETURN(const json* h, ObjectField(obj, "header", path, false));
  const std::string p = fmt::format("{}header.", path);
  ResponseHeader out;
  DS_ASSIGN_OR_RETURN(out.revision, IntField(*h, "revision", p));
  DS_ASSIGN_OR_RETURN(int64_t member, IntField(*h, "member_id", p));
  out.member_id = static_cast<uint64_t>(member);
  DS_ASSIGN_OR_RETURN(out.raft_term, IntField(*h, "raft_term", p));
  return out;
}

Result<KeyValue> Kv(const json& obj, std::string_view path) {
  KeyValue kv;
  DS_ASSIGN_OR_RETURN(kv.key, BytesField(obj, "key", path));
  DS_ASSIGN_OR_RETURN(kv.value, BytesField(obj, "value", path));
  DS_ASSIGN_OR_RETURN(kv.create_revision, IntField(obj, "create_revision", path));
  DS_ASSIGN_OR_RETURN(kv.mod_revision, IntField(obj, "mod_revision", path));
  DS_ASSIGN_OR_RETURN(kv.version, IntField(obj, "version", path));
  DS_ASSIGN_OR_RETURN(kv.lease, IntField(obj, "lease", path));
  return kv;
}

Result<RangeResponse> Range(const json& obj, std::string_view path) {
  RangeResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(obj, path));
  DS_ASSIGN_OR_RETURN(r.count, IntField(obj, "count", path));
  DS_ASSIGN_OR_RETURN(r.more, BoolField(obj, "more", path));
  const auto it = obj.find("kvs");
  if (it == obj.end() || it->is_null()) return r;
  if (!it->is_array()) return BadField(fmt::format("{}kvs", path), "an array", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_object()) return BadField(fmt::format("{}kvs[{}]", path, i), "an object", (*it)[i]);
    DS_ASSIGN_OR_RETURN(KeyValue kv, Kv((*it)[i], fmt::format("{}kvs[{}].", path, i)));
    r.kvs.push_back(std::move(kv));
  }
  return r;
}

json RangeJson(const RangeRequest& r) {
  json j = {{"key", Base64Encode(r.key)}};
  if (!r.range_end.empty()) j["range_end"] = Base64Encode(r.range_end);
  if (r.limit != 0) j["limit"] = std::to_string(r.limit);
  if (r.revision != 0) j["revision"] = std::to_string(r.revision);
  if (r.serializable) j["serializable"] = true;
  return j;
}

json PutJson(const PutRequest& r) {
  json j = {{"key", Base64Encode(r.key)}, {"value", Base64Encode(r.value)}};
  if (r.lease != 0) j["lease"] = std::to_string(r.lease);
  return j;
}

json DeleteJson(const DeleteRequest& r) {
  json j = {{"key", Base64Encode(r.key)}};
  if (!r.range_end.empty()) j["range_end"] = Base64Encode(r.range_end);
  return j;
}

json CompareJson(const Compare& c) {
  static constexpr std::array<const char*, 4> kTargets = {"VERSION", "CREATE", "MOD", "VALUE"};
  static constexpr std::array<const char*, 4> kOps = {"EQUAL", "GREATER", "LESS", "NOT_EQUAL"};
  json j = {{"key", Base64Encode(c.key)},
            {"target", kTargets[static_cast<size_t>(c.target)]},
            {"result", kOps[static_cast<size_t>(c.op)]}};
  switch (c.target) {
    case Compare::Target::kVersion: j["version"] = std::to_string(c.number); break;
    case Compare::Target::kCreate: j["create_revision"] = std::to_string(c.number); break;
    case Compare::Target::kMod: j["mod_revision"] = std::to_string(c.number); break;
    case Compare::Target::kValue: j["value"] = Base64Encode(c.value); break;
  }
  return j;
}

json OpsJson(const std::vector<TxnOp>& ops) {
  json out = json::array();
  for (const TxnOp& op : ops) {
    if (const auto* r = std::get_if<RangeRequest>(&op)) out.push_back({{"request_range", RangeJson(*r)}});
    if (const auto* p = std::get_if<PutRequest>(&op)) out.push_back({{"request_put", PutJson(*p)}});
    if (const auto* d = std::get_if<DeleteRequest>(&op)) out.push_back({{"request_delete_range", DeleteJson(*d)}});
  }
  return out;
}

Result<TxnOpResponse> OpResponse(const json& obj, std::string_view path) {
  TxnOpResponse out;
  if (const auto it = obj.find("response_range"); it != obj.end() && it->is_object()) {
    out.kind = TxnOpResponse::Kind::kRange;
    DS_ASSIGN_OR_RETURN(out.range, Range(*it, fmt::format("{}response_range.", path)));
    return out;
  }
  if (const auto it = obj.find("response_delete_range"); it != obj.end() && it->is_object()) {
    out.kind = TxnOpResponse::Kind::kDelete;
    DS_ASSIGN_OR_RETURN(out.deleted, IntField(*it, "deleted", fmt::format("{}response_delete_range.", path)));
    return out;
  }
  if (const auto it = obj.find("response_put"); it != obj.end() && it->is_object()) return out;
  return BadField(std::string(path.substr(0, path.size() - 1)), "response_range, response_put or response_delete_range",
                  obj);
}

// The {"result": {...}} wrapper of a streamed reply, or its {"error": ...}.
Result<const json*> StreamResult(const json& j) {
  if (auto e = j.find("error"); e != j.end()) {
    const bool has_message = e->is_object() && e->contains("message") && (*e)["message"].is_string();
    const std::string reason = has_message ? (*e)["message"].get<std::string>() : e->dump();
    return Status::Unavailable(fmt::format("etcd stream error: {}", reason));
  }
  return ObjectField(j, "result", "", true);
}

Result<std::vector<std::string>> TextList(const json& obj, const char* name, std::string_view path) {
  std::vector<std::string> out;
  const auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return out;
  const std::string field = fmt::format("{}{}", path, name);
  if (!it->is_array()) return BadField(field, "a list of text", *it);
  for (const json& e : *it) {
    if (!e.is_string()) return BadField(field, "a list of text", *it);
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<Member> MemberOf(const json& obj, std::string_view path) {
  Member m;
  DS_ASSIGN_OR_RETURN(int64_t id, IntField(obj, "ID", path));
  m.id = static_cast<uint64_t>(id);
  if (const auto n = obj.find("name"); n != obj.end() && !n->is_null()) {
    if (!n->is_string()) return BadField(fmt::format("{}name", path), "text", *n);
    m.name = n->get<std::string>();
  }
  DS_ASSIGN_OR_RETURN(m.peer_urls, TextList(obj, "peerURLs", path));
  DS_ASSIGN_OR_RETURN(m.client_urls, TextList(obj, "clientURLs", path));
  return m;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (two ? uint8_t(bytes[i + 1]) << 8 : 0);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(two ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text, std::string_view what) {
  if (text.size() % 4 != 0)
    return Status::InvalidArgument(fmt::format("{}: invalid base64 at byte {} (length not a multiple of 4)", what,
                                               text.size()));
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int s = k >= 4 - size_t(pad) ? 0 : Sextet(text[i + k]);
      if (s < 0) return Status::InvalidArgument(fmt::format("{}: invalid base64 at byte {}", what, i + k));
      v = (v << 6) | uint32_t(s);
    }
    out.push_back(char(v >> 16));
    if (pad < 2) out.push_back(char((v >> 8) & 0xff));
    if (pad < 1) out.push_back(char(v & 0xff));
  }
  return out;
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (uint8_t(end.back()) != 0xff) {
      end.back() = char(uint8_t(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string EncodeRange(const RangeRequest& r) { return RangeJson(r).dump(); }
std::string EncodePut(const PutRequest& r) { return PutJson(r).dump(); }
std::string EncodeDelete(const DeleteRequest& r) { return DeleteJson(r).dump(); }

std::string EncodeTxn(const TxnRequest& r) {
  json cmp = json::array();
  for (const Compare& c : r.compare) cmp.push_back(CompareJson(c));
  return json{{"compare", cmp}, {"success", OpsJson(r.success)}, {"failure", OpsJson(r.failure)}}.dump();
}

std::string EncodeLeaseGrant(int64_t ttl_s, int64_t id) {
  return json{{"TTL", std::to_string(ttl_s)}, {"ID", std::to_string(id)}}.dump();
}

std::string EncodeLeaseId(int64_t id) { return json{{"ID", std::to_string(id)}}.dump(); }

std::string EncodeWatchCreate(const WatchRequest& r) {
  json c = {{"key", Base64Encode(r.key)}};
  if (!r.range_end.empty()) c["range_end"] = Base64Encode(r.range_end);
  if (r.start_revision != 0) c["start_revision"] = std::to_string(r.start_revision);
  return json{{"create_request", c}}.dump();
}

std::string EncodeMemberAdd(const std::vector<std::string>& peer_urls) { return json{{"peerURLs", peer_urls}}.dump(); }

std::string EncodeMemberId(uint64_t id) { return json{{"ID", std::to_string(id)}}.dump(); }

Result<MembersResponse> DecodeMembers(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  MembersResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(j, ""));
  if (const auto list = j.find("members"); list != j.end() && !list->is_null()) {
    if (!list->is_array()) return BadField("members", "a list", *list);
    for (size_t i = 0; i < list->size(); ++i) {
      DS_ASSIGN_OR_RETURN(Member m, MemberOf((*list)[i], fmt::format("members[{}].", i)));
      r.members.push_back(std::move(m));
    }
  }
  DS_ASSIGN_OR_RETURN(const json* added, ObjectField(j, "member", "", false));
  DS_ASSIGN_OR_RETURN(r.added, MemberOf(*added, "member."));
  return r;
}

Result<RangeResponse> DecodeRange(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  return Range(j, "");
}

Result<ResponseHeader> DecodeHeaderOnly(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  return Header(j, "");
}

Result<int64_t> DecodeDeleted(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  return IntField(j, "deleted", "");
}

Result<TxnResponse> DecodeTxn(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  TxnResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(j, ""));
  DS_ASSIGN_OR_RETURN(r.succeeded, BoolField(j, "succeeded", ""));
  const auto it = j.find("responses");
  if (it == j.end() || it->is_null()) return r;
  if (!it->is_array()) return BadField("responses", "an array", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_object()) return BadField(fmt::format("responses[{}]", i), "an object", (*it)[i]);
    DS_ASSIGN_OR_RETURN(TxnOpResponse op, OpResponse((*it)[i], fmt::format("responses[{}].", i)));
    r.responses.push_back(std::move(op));
  }
  return r;
}

Result<LeaseResponse> DecodeLeaseGrant(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  LeaseResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(j, ""));
  DS_ASSIGN_OR_RETURN(r.id, IntField(j, "ID", ""));
  DS_ASSIGN_OR_RETURN(r.ttl, IntField(j, "TTL", ""));
  if (const auto e = j.find("error"); e != j.end() && e->is_string() && !e->get<std::string>().empty())
    return Status::Unavailable(fmt::format("etcd refused the lease: {}", e->get<std::string>()));
  if (r.id == 0) return Status::InvalidArgument("etcd reply: ID: missing (no lease granted)");
  return r;
}

Result<LeaseResponse> DecodeLeaseKeepAlive(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  DS_ASSIGN_OR_RETURN(const json* res, StreamResult(j));
  LeaseResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(*res, "result."));
  DS_ASSIGN_OR_RETURN(r.id, IntField(*res, "ID", "result."));
  DS_ASSIGN_OR_RETURN(r.ttl, IntField(*res, "TTL", "result."));
  return r;
}

Result<WatchResponse> DecodeWatch(std::string_view body) {
  DS_ASSIGN_OR_RETURN(json j, ParseObject(body));
  DS_ASSIGN_OR_RETURN(const json* res, StreamResult(j));
  WatchResponse r;
  DS_ASSIGN_OR_RETURN(r.header, Header(*res, "result."));
  DS_ASSIGN_OR_RETURN(r.watch_id, IntField(*res, "watch_id", "result."));
  DS_ASSIGN_OR_RETURN(r.created, BoolField(*res, "created", "result."));
  DS_ASSIGN_OR_RETURN(r.canceled, BoolField(*res, "canceled", "result."));
  DS_ASSIGN_OR_RETURN(r.compact_revision, IntField(*res, "compact_revision", "result."));
  if (const auto c = res->find("cancel_reason"); c != res->end() && c->is_string()) r.cancel_reason = c->get<std::string>();
  const auto it = res->find("events");
  if (it == res->end() || it->is_null()) return r;
  if (!it->is_array()) return BadField("result.events", "an array", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    const std::string path = fmt::format("result.events[{}].", i);
    if (!e.is_object()) return BadField(path.substr(0, path.size() - 1), "an object", e);
    WatchEvent ev;
    const auto type = e.find("type");
    if (type != e.end() && !type->is_null() && *type != "PUT") {
      if (*type != "DELETE") return BadField(path + "type", "PUT or DELETE", *type);
      ev.type = WatchEvent::Type::kDelete;
    }
    DS_ASSIGN_OR_RETURN(const json* kv, ObjectField(e, "kv", path, true));
    DS_ASSIGN_OR_RETURN(ev.kv, Kv(*kv, path + "kv."));
    r.events.push_back(std::move(ev));
  }
  return r;
}

std::optional<GatewayError> DecodeError(std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto code = j.find("code");
  if (code == j.end() || !code->is_number_integer()) return std::nullopt;
  GatewayError e{code->get<int>(), ""};
  for (const char* name : {"message", "error"})
    if (const auto m = j.find(name); m != j.end() && m->is_string() && e.message.empty()) e.message = m->get<std::string>();
  return e;
}

}  // namespace ds::etcd
