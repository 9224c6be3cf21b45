#include "launcher/coordinator/kv_store.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace ds {

void KvStore::Set(const std::string& key, Bytes value) {
  data_[key] = std::move(value);
  Notify();
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
  if (!FirstMissing(keys)) {
    ready();
    return 0;
  }
  uint64_t id = next_id_++;
  waiters_[id] = Waiter{std::move(keys), std::move(ready)};
  return id;
}

void KvStore::Notify() {
  std::vector<Ready> fire;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (!FirstMissing(it->second.keys)) {
      fire.push_back(std::move(it->second.ready));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& f : fire) f();  // after the loop: a callback may Set/AddWaiter
}

}  // namespace ds
