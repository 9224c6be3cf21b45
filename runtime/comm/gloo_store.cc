#include "runtime/comm/gloo_store.h"

#include <filesystem>

#include <fmt/format.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>

#include "runtime/comm/communicator.h"
#include "wire/store_client.h"

namespace ds::rt {

void StoreClientStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = client_.Set(key, std::vector<uint8_t>(data.begin(), data.end()));
  if (!st.ok()) throw CommError(fmt::format("store set '{}': {}", key, st.message()));
}

std::vector<char> StoreClientStore::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto v = client_.Get(key, timeout_);
  if (!v.ok()) throw CommError(fmt::format("store get '{}': {}", key, v.status().message()));
  return std::vector<char>(v->begin(), v->end());
}

void StoreClientStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = client_.Wait(keys, timeout);
  if (!st.ok()) throw CommError(fmt::format("store wait: {}", st.message()));
}

Result<RendezvousStore> OpenRendezvousStore(const RendezvousOptions& options) {
  RendezvousStore out;
  gloo::rendezvous::Store* base = nullptr;
  if (!options.store_addr.empty()) {
    auto client = StoreClient::Connect(options.store_addr, options.store_token, options.timeout);
    if (!client.ok()) return client.status().Prefixed("DSLAUNCH_STORE_ADDR=" + options.store_addr);
    std::shared_ptr<StoreClient> shared(std::move(client).value());
    auto adapter = std::make_shared<StoreClientStore>(*shared, options.timeout);
    base = adapter.get();
    out.backing = std::make_shared<std::pair<std::shared_ptr<StoreClient>,
                                             std::shared_ptr<StoreClientStore>>>(shared, adapter);
    out.description = "store " + options.store_addr;
  } else if (!options.store_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.store_path, ec);
    if (ec)
      return Status::IOError(fmt::format("DSLAUNCH_STORE_PATH={}: cannot create: {}",
                                         options.store_path, ec.message()));
    auto fs = std::make_shared<gloo::rendezvous::FileStore>(options.store_path);
    base = fs.get();
    out.backing = fs;
    out.description = "file store " + options.store_path;
  } else {
    return Status::InvalidArgument(
        "no rendezvous store: set DSLAUNCH_STORE_ADDR (set by dslaunch) or DSLAUNCH_STORE_PATH "
        "(a directory shared by all ranks) when WORLD_SIZE > 1");
  }
  out.store = base;
  return out;
}

std::unique_ptr<gloo::rendezvous::Store> GenerationStore(gloo::rendezvous::Store& base, const std::string& job_id,
                                                         uint32_t generation) {
  return std::make_unique<gloo::rendezvous::PrefixStore>(fmt::format("dstrain/{}/{}/gloo", job_id, generation),
                                                         base);
}

}  // namespace ds::rt
