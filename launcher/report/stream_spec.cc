#include "launcher/report/stream_spec.h"

#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {

int StreamSpec::For(int local_rank) const {
  auto it = by_local_rank.find(local_rank);
  return it == by_local_rank.end() ? all : it->second;
}

bool StreamSpec::any() const {
  if (all != 0) return true;
  for (const auto& [lr, v] : by_local_rank)
    if (v != 0) return true;
  return false;
}

Result<StreamSpec> ParseStreamSpec(const std::string& flag, const std::string& text) {
  auto bad = [&] {
    return Status::InvalidArgument(fmt::format(
        "{} {}: expected 0-3 (1 stdout, 2 stderr, 3 both) for every local rank, or LOCAL_RANK:N pairs such as "
        "0:1,1:2",
        flag, text));
  };
  auto streams = [](std::string_view s) -> std::optional<int> {
    auto v = ParseInt(Trim(s));
    return v && *v >= 0 && *v <= 3 ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  };
  StreamSpec spec;
  if (text.find(':') == std::string::npos) {
    auto v = streams(text);
    if (!v) return bad();
    spec.all = *v;
    return spec;
  }
  for (const std::string& pair : Split(text, ',')) {
    size_t colon = pair.find(':');
    if (colon == std::string::npos) return bad();
    auto lr = ParseInt(Trim(std::string_view(pair).substr(0, colon)));
    auto v = streams(std::string_view(pair).substr(colon + 1));
    if (!lr || *lr < 0 || !v) return bad();
    spec.by_local_rank[static_cast<int>(*lr)] = *v;
  }
  return spec;
}

}  // namespace ds
