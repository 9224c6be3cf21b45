#include "launcher/coordinator/kv_store.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {

void KvStore::Set(const std::string& key, Bytes value) {
  data_[key] = std::move(value);
  Notify(key);
}

std::optional<Bytes> KvStore::Get(const std::string& key) const {
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

Result<int64_t> KvStore::Add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  auto it = data_.find(key);
  if (it != data_.end()) {
    auto n = ParseInt(std::string(it->second.begin(), it->second.end()));
    if (!n) return Status::InvalidArgument(fmt::format("key '{}' holds a non-integer value", key));
    current = *n;
  }
  current += delta;
  std::string text = std::to_string(current);
  Set(key, Bytes(text.begin(), text.end()));
  return current;
}

std::optional<std::string> KvStore::FirstMissing(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (!Has(k)) return k;
  return std::nullopt;
}

uint64_t KvStore::AddWaiter(std::vector<std::string> keys, Ready ready) {
  auto missing = FirstMissing(keys);
  if (!missing) {
    ready();
    return 0;
  }
  uint64_t id = next_id_++;
  waiters_[id] = Waiter{std::move(keys), std::move(ready)};
  waiting_on_[*missing].push_back(id);
  return id;
}

// `key` now exists: each waiter filed under it is ready or waits on its next
// missing key.
void KvStore::Notify(const std::string& key) {
  auto filed = waiting_on_.find(key);
  if (filed == waiting_on_.end()) return;
  std::vector<uint64_t> ids = std::move(filed->second);
  waiting_on_.erase(filed);
  std::vector<Ready> fire;
  for (uint64_t id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;  // removed (timed out)
    if (auto missing = FirstMissing(w->second.keys)) {
      waiting_on_[*missing].push_back(id);
    } else {
      fire.push_back(std::move(w->second.ready));
      waiters_.erase(w);
    }
  }
  for (auto& f : fire) f();  // after the loop: a callback may Set/AddWaiter
}

}  // namespace ds
