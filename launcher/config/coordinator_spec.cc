#include "launcher/config/coordinator_spec.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/strings.h"
#include "launcher/failover/etcd_transport.h"
#include "runtime/config/yaml_keys.h"

namespace ds {
namespace {

const std::vector<std::string> kCoordinatorKeys = {"etcd", "replicas", "grace", "standbys", "ca", "cert", "key",
                                                   "prefix"};
constexpr size_t kMaxKeyProblems = 64;  // the job file shows its first 20 problems anyway
constexpr const char* kModes =
    "etcd: [HOST:PORT, ...] (an etcd your site runs) or replicas: N (dslaunch starts an etcd member and a "
    "standby coordinator on each of the first N hosts)";
constexpr const char* kReplicasExpected = "expected an odd integer from 3 to 7";

// A host name as DNS writes it, or (written in brackets) an IPv6 address,
// a zone after '%' allowed. Endpoint::Parse took the brackets off.
bool IsEndpointHost(std::string_view host, bool bracketed) {
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
  };
  if (!bracketed) return !host.empty() && std::all_of(host.begin(), host.end(), name_char);
  const std::string_view addr = host.substr(0, host.find('%'));
  const std::string_view zone = addr.size() < host.size() ? host.substr(addr.size() + 1) : "x";
  const auto addr_char = [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
  };
  return addr.find(':') != std::string_view::npos && !zone.empty() &&
         std::all_of(addr.begin(), addr.end(), addr_char) && std::all_of(zone.begin(), zone.end(), name_char);
}

// ", got 'x'" for a scalar, "" for a list or a map.
std::string Got(const YAML::Node& n) { return n.IsScalar() ? ", got '" + n.Scalar() + "'" : ""; }

// Reads one coordinator: section, keeping every problem (not the first).
class SectionReader {
 public:
  SectionReader(const std::string& path, CoordinatorSpec& out) : path_(path), out_(out) {}

  std::vector<Status> Read(const YAML::Node& key, const YAML::Node& v) {
    out_.at = Where(key);
    if (v.IsNull()) {
      Error(key, "", std::string("expected ") + kModes);
      return std::move(errors_);
    }
    if (!v.IsMap()) {
      Error(v, "", std::string("expected a mapping with ") + kModes);
      return std::move(errors_);
    }
    errors_ = rt::cfg::KeyProblems(v, path_, "coordinator", kCoordinatorKeys, kMaxKeyProblems);
    for (const auto& kv : v)
      if (kv.first.IsScalar()) Value(kv.first, kv.second);
    Modes(key);
    return std::move(errors_);
  }

 private:
  // "path:line:col" of `n`; "path" when yaml-cpp has no position for it.
  std::string Where(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.is_null()) return path_;
    return fmt::format("{}:{}:{}", path_, m.line + 1, m.column + 1);
  }

  // "path:line:col: 'coordinator.NAME': msg" ('coordinator' for the section itself).
  void Error(const YAML::Node& n, const std::string& name, const std::string& msg) {
    errors_.push_back(Status::InvalidArgument(
        fmt::format("{}: 'coordinator{}{}': {}", Where(n), name.empty() ? "" : ".", name, msg)));
  }

  void Value(const YAML::Node& k, const YAML::Node& v) {
    const std::string& name = k.Scalar();
    if (name == "etcd") {
      etcd_key_.emplace(k);
      Etcd(v);
    } else if (name == "replicas") {
      replicas_key_.emplace(k);
      Replicas(v);
    } else if (name == "grace") {
      Grace(v);
    } else if (name == "ca" || name == "cert" || name == "key" || name == "prefix" || name == "standbys") {
      site_keys_.emplace_back(k, v);  // read once the mode is known (Modes)
    }
  }

  // ca, cert, key: a file's path; prefix: below.
  void SiteValue(const YAML::Node& k, const YAML::Node& v) {
    const std::string& name = k.Scalar();
    if (name == "prefix") return Prefix(v);
    if (name == "standbys") return Standbys(v);
    std::string& field = name == "ca" ? out_.ca : name == "cert" ? out_.cert : out_.key;
    if (!v.IsScalar() || v.Scalar().empty()) return Error(v, name, "expected a file path (PEM)" + Got(v));
    field = v.Scalar();
  }

  void Etcd(const YAML::Node& v) {
    out_.etcd_at = Where(v);
    out_.etcd.clear();
    if (!v.IsSequence() || v.size() == 0)
      return Error(v, "etcd", "expected a non-empty list of HOST:PORT such as [etcd1:2379, etcd2:2379]" + Got(v));
    for (const auto& e : v) {
      if (!e.IsScalar() || !IsEtcdEndpoint(e.Scalar()))
        Error(e, "etcd", "expected HOST:PORT with a port from 1 to 65535 (an IPv6 address in brackets: "
                         "[fd00::1]:2379)" + Got(e));
      else if (std::find(out_.etcd.begin(), out_.etcd.end(), e.Scalar()) != out_.etcd.end())
        Error(e, "etcd", "'" + e.Scalar() + "' is listed twice");
      else
        out_.etcd.push_back(e.Scalar());
    }
  }

  void Replicas(const YAML::Node& v) {
    out_.replicas_at = Where(v);
    const std::optional<int64_t> n = v.IsScalar() ? ParseInt(v.Scalar()) : std::nullopt;
    if (n == 1)
      return Error(v, "replicas", fmt::format("{}, got 1: one member gives no failover (losing its host still "
                                              "ends the job)", kReplicasExpected));
    if (n && *n >= 2 && *n < kMaxCoordinatorReplicas && *n % 2 == 0)
      return Error(v, "replicas", fmt::format("{}, got {}: a majority of an even count tolerates no more losses "
                                              "than one fewer ({} members and {} both survive {} lost)",
                                              kReplicasExpected, *n, *n, *n - 1, *n / 2 - 1));
    if (!n || *n < kMinCoordinatorReplicas || *n > kMaxCoordinatorReplicas)
      return Error(v, "replicas", kReplicasExpected + Got(v));
    out_.replicas = static_cast<int>(*n);
  }

  void Grace(const YAML::Node& v) {
    const std::optional<double> s = v.IsScalar() ? ParseSeconds(v.Scalar()) : std::nullopt;
    if (!s || !InRange(*s, kCoordinatorGraceRange))
      return Error(v, "grace", "expected " + RangeText(kCoordinatorGraceRange) + " such as 15s" + Got(v));
    out_.grace_s = *s;
  }

  void Standbys(const YAML::Node& v) {
    out_.standbys_at = Where(v);
    const std::optional<int64_t> n = v.IsScalar() ? ParseInt(v.Scalar()) : std::nullopt;
    if (!n || *n < 0 || *n > kMaxCoordinatorReplicas)
      return Error(v, "standbys", fmt::format("expected 0 to {} (a standby coordinator on each of the first N "
                                              "hosts){}", kMaxCoordinatorReplicas, Got(v)));
    out_.standbys = static_cast<int>(*n);
  }

  void Prefix(const YAML::Node& v) {
    const bool ok = v.IsScalar() && StartsWith(v.Scalar(), "/") &&
                    std::none_of(v.Scalar().begin(), v.Scalar().end(),
                                 [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
    if (!ok) return Error(v, "prefix", "expected a key prefix that starts with '/' and holds no whitespace, such as "
                                       "/dslaunch/" + Got(v));
    out_.prefix = v.Scalar();
  }

  // One mode, and the keys that belong to it.
  void Modes(const YAML::Node& section_key) {
    const bool etcd = etcd_key_.has_value(), replicas = replicas_key_.has_value();
    if (etcd && replicas) {
      const YAML::Node& later = etcd_key_->Mark().pos > replicas_key_->Mark().pos ? *etcd_key_ : *replicas_key_;
      Error(later, "", std::string("etcd and replicas are both set; choose one: ") + kModes);
    } else if (!etcd && !replicas) {
      Error(section_key, "", std::string("expected ") + kModes);
    }
    bool cert = false, key = false;
    for (const auto& [k, v] : site_keys_) {
      cert = cert || k.Scalar() == "cert";
      key = key || k.Scalar() == "key";
      if (replicas && !etcd)
        Error(k, k.Scalar(), k.Scalar() == "prefix"
                                 ? "applies to etcd: only (replicas: starts an etcd that holds this job's keys alone)"
                             : k.Scalar() == "standbys"
                                 ? "applies to etcd: only (replicas: N starts a standby on each of its N hosts)"
                                 : "applies to etcd: only (replicas: starts an etcd with the job's own CA and "
                                   "certificates, made by dslaunch)");
      else
        SiteValue(k, v);
    }
    if (replicas || cert == key) return;
    for (const auto& [k, v] : site_keys_) {
      if (k.Scalar() == "cert")
        Error(k, "cert", "is set without coordinator.key: a client certificate needs its private key (set both or "
                         "neither)");
      else if (k.Scalar() == "key")
        Error(k, "key", "is set without coordinator.cert: a private key needs its client certificate (set both or "
                        "neither)");
    }
  }

  const std::string& path_;
  CoordinatorSpec& out_;
  std::vector<Status> errors_;
  std::optional<YAML::Node> etcd_key_, replicas_key_;  // the keys, when written (a default Node is "defined")
  std::vector<std::pair<YAML::Node, YAML::Node>> site_keys_;  // ca, cert, key, prefix: key and value
};

}  // namespace

std::vector<Status> ParseCoordinatorSection(const YAML::Node& key, const YAML::Node& value, const std::string& path,
                                            CoordinatorSpec& out) {
  return SectionReader(path, out).Read(key, value);
}

bool IsEtcdEndpoint(std::string_view text) {
  const Result<etcd::Endpoint> ep = etcd::Endpoint::Parse(text, /*tls_default=*/false);
  return ep.ok() && IsEndpointHost(ep->host, text.find('[') != std::string_view::npos);
}

double CoordinatorGrace(const CoordinatorSpec& spec, double heartbeat_timeout_s) {
  return spec.grace_s > 0 ? spec.grace_s : kDefaultGraceHeartbeats * heartbeat_timeout_s;
}

Status CheckReplicasFit(const CoordinatorSpec& spec, size_t num_hosts) {
  if (spec.standbys > 0 && static_cast<size_t>(spec.standbys) > num_hosts)
    return Status::InvalidArgument(fmt::format("{}coordinator.standbys is {} but the job has {} host{}; a standby "
                                               "runs on each of the first N hosts: write standbys: {} or add hosts",
                                               spec.standbys_at.empty() ? "" : spec.standbys_at + ": ",
                                               spec.standbys, num_hosts, num_hosts == 1 ? "" : "s", num_hosts));
  if (spec.replicas <= 0 || static_cast<size_t>(spec.replicas) <= num_hosts) return Status::OK();
  const std::string at = spec.replicas_at.empty() ? "" : spec.replicas_at + ": ";
  const int most = static_cast<int>(std::min<size_t>(kMaxCoordinatorReplicas, num_hosts));
  const std::string fix = most >= kMinCoordinatorReplicas
                              ? fmt::format("write replicas: {} or add hosts", most % 2 == 1 ? most : most - 1)
                              : "failover needs 3 hosts or more: add hosts or remove coordinator:";
  return Status::InvalidArgument(fmt::format(
      "{}coordinator.replicas is {} but the job has {} host{}; each replica (an etcd member and a standby "
      "coordinator) needs a host of its own: {}",
      at, spec.replicas, num_hosts, num_hosts == 1 ? "" : "s", fix));
}

}  // namespace ds
