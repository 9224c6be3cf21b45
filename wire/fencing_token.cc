#include "wire/fencing_token.h"

#include <fmt/format.h>

namespace ds {

Status FencingGuard::Admit(uint64_t token, std::string_view from) {
  if (token >= newest_) {
    newest_ = token;
    return Status::OK();
  }
  if (token == 0)
    return Status::Aborted(fmt::format(
        "fencing: refused a frame from {} without a token: a leader's (token {}) was seen", from, newest_));
  return Status::Aborted(fmt::format(
      "fencing: refused a frame from {} with token {}: a newer leader's (token {}) was seen (a deposed leader)", from,
      token, newest_));
}

}  // namespace ds
