#include "launcher/join/rdzv_conf.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {
namespace {

// torchrun's rendezvous keys that mean nothing to dslaunch's own rendezvous.
bool KnownIgnored(const std::string& key) {
  for (const char* k : {"close_timeout", "timeout", "read_timeout", "keep_alive_interval", "keep_alive_max_attempt",
                        "heartbeat", "use_libuv", "store_type"})
    if (key == k) return true;
  return false;
}

Result<double> Seconds(const std::string& flag, const std::string& pair, const std::string& value) {
  auto s = ParseSeconds(value);
  if (!s || *s <= 0 || *s > 86400.0)
    return Status::InvalidArgument(
        fmt::format("{} '{}': expected a duration between 1ms and 24h, such as 30 or 30s, got '{}'", flag, pair, value));
  return *s;
}

Result<bool> Bool(const std::string& flag, const std::string& pair, const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (v == "1" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "no") return false;
  return Status::InvalidArgument(fmt::format("{} '{}': expected true or false, got '{}'", flag, pair, value));
}

}  // namespace

Result<RendezvousConf> ParseRendezvousConf(const std::string& flag, const std::string& text) {
  RendezvousConf c;
  for (const std::string& pair : Split(text, ',')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument(fmt::format("{}: expected KEY=VALUE,... (join_timeout, last_call_timeout, "
                                                 "is_host), got '{}'", flag, pair));
    const std::string key = pair.substr(0, eq), value = pair.substr(eq + 1);
    if (key == "join_timeout") {
      DS_ASSIGN_OR_RETURN(c.join_timeout, Seconds(flag, pair, value));
    } else if (key == "last_call_timeout") {
      DS_ASSIGN_OR_RETURN(c.last_call_timeout, Seconds(flag, pair, value));
    } else if (key == "is_host") {
      DS_ASSIGN_OR_RETURN(c.is_host, Bool(flag, pair, value));
    } else if (KnownIgnored(key)) {
      c.ignored.push_back(key);
    } else {
      return Status::InvalidArgument(fmt::format(
          "{}: unknown key '{}'{} (dslaunch reads join_timeout, last_call_timeout and is_host)", flag, key,
          DidYouMeanHint(key, {"join_timeout", "last_call_timeout", "is_host"})));
    }
  }
  return c;
}

}  // namespace ds
