#include "agent/node_facts.h"

#include <sched.h>
#include <unistd.h>


#include "common/cpu_binding.h"  // VisibleGpus
#include "common/env_registry.h"
#include "common/netif.h"
#include "common/strings.h"

namespace ds {

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
}

Result<msg::Register> GatherNodeFacts(int node_index, const std::string& host, const std::string& bind_addr,
                                      const std::string& coordinator_host) {
  msg::Register r;
  r.node_index = static_cast<uint32_t>(node_index);
  char name[256] = "";
  ::gethostname(name, sizeof(name) - 1);
  r.hostname = name;
  r.host = host.empty() ? r.hostname : host;
  if (!bind_addr.empty()) {
    r.addr = bind_addr;
    r.ifname = InterfaceOfAddress(bind_addr);
    if (r.ifname.empty() && StartsWith(bind_addr, "127.")) r.ifname = InterfaceOfAddress("127.0.0.1");
  } else {
    DS_ASSIGN_OR_RETURN(Route route, RouteTo(coordinator_host));
    r.addr = route.local_addr;
    r.ifname = route.ifname;
  }
  r.addrs = LocalAddresses();
  r.cpus = static_cast<uint32_t>(UsableCpus());
  r.gpus = static_cast<uint32_t>(VisibleGpus());
  r.pid = static_cast<int32_t>(::getpid());
  for (const char* k : {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
                       "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"})
    if (auto v = GetAnyEnv(k)) r.env.emplace_back(k, *v);
  return r;
}

}  // namespace ds
