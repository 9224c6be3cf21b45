// The messages of the dslaunch protocol (types in wire_format.h, prose in
// wire_format.md) as plain structs with Encode()/Decode(). Decode fails with
// InvalidArgument("truncated <Msg> payload" / "... trailing bytes") on any
// payload that does not match exactly. Value types, thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "common/frame_io.h"

namespace ds::msg {

#define DS_MESSAGE(Name)            \
  Bytes Encode() const;             \
  static Result<Name> Decode(const Bytes& payload)

struct Hello {
  wire::Role role = wire::Role::kAgent;
  std::string name;        // host name (agent) or a client label (store)
  std::string job_id;
  uint32_t node_index = 0;
  DS_MESSAGE(Hello);
};
struct Challenge { Bytes nonce; DS_MESSAGE(Challenge); };
struct Auth { Bytes mac; DS_MESSAGE(Auth); };
struct AuthOk { Bytes mac; DS_MESSAGE(AuthOk); };
struct Error {
  uint32_t code = 0;       // wire::ErrorCode
  std::string message;
  DS_MESSAGE(Error);
};

// Node facts, sent once after the handshake.
struct Register {
  uint32_t node_index = 0;
  std::string host;            // as written in the hostfile (--host)
  std::string hostname;        // gethostname()
  std::string addr;            // the agent's address that routes to the coordinator
  std::string ifname;          // the interface holding `addr`
  std::vector<std::string> addrs;  // every non-loopback IPv4/IPv6 address
  uint32_t cpus = 0;
  uint32_t gpus = 0;           // /dev/nvidia[0-9]* visible
  int32_t pid = 0;
  std::string heartbeat_addr;  // host:port of the agent's UDP step-heartbeat socket
  KeyValues env;               // the agent's values of variables WorkerEnv must not override
  DS_MESSAGE(Register);
};
struct Reserve { uint32_t generation = 0; uint32_t port = 0; DS_MESSAGE(Reserve); };  // port 0 = any
struct Reserved {
  uint32_t generation = 0;
  uint32_t port = 0;
  std::string error;           // "" on success
  DS_MESSAGE(Reserved);
};
struct WorkerSpec {
  int32_t rank = 0;
  int32_t local_rank = 0;
  KeyValues env;               // added to (and overriding) the agent's environment
};
struct Assign {
  uint32_t generation = 0;
  std::vector<std::string> argv;  // the worker command, exec'd directly (no shell)
  std::string working_dir;        // "" = the agent's
  std::string master_addr;        // for the interface lookup (NCCL/GLOO_SOCKET_IFNAME)
  uint32_t stop_grace_ms = static_cast<uint32_t>(kDefaultStopGrace * 1000);  // SIGTERM -> SIGKILL
  uint32_t hang_timeout_ms = static_cast<uint32_t>(kDefaultHangTimeout * 1000);  // 0 = off
  std::vector<WorkerSpec> workers;
  uint8_t local_rank_arg = 0;     // append --local_rank=<local rank> to each worker's argv
  uint8_t bind_cores = 0;         // pin local rank r of n to the r-th of n slices of the cores
  std::string core_list;          // the cores to share out ("0-3,8-11"); "" = the agent's allowed CPUs
  uint8_t omp_from_binding = 0;   // with bind_cores: OMP_NUM_THREADS = the slice's size (nobody set it)
  DS_MESSAGE(Assign);
};
struct WorkerStarted { uint32_t generation = 0; int32_t rank = 0; int32_t pid = 0; DS_MESSAGE(WorkerStarted); };
struct Output {
  uint32_t generation = 0;
  int32_t rank = 0;
  uint8_t stream = 1;          // 1 stdout, 2 stderr
  std::string line;            // without the newline
  DS_MESSAGE(Output);
};
struct WorkerExited {
  uint32_t generation = 0;
  int32_t rank = 0;
  int32_t pid = 0;
  int32_t exit_code = 0;       // valid when signal == 0
  int32_t signal = 0;          // the terminating signal, 0 if it exited
  uint8_t hung = 0;            // killed by the agent for a stalled step heartbeat
  uint8_t spawn_failed = 0;    // exec failed (exit_code 127)
  // From the worker's TORCHELASTIC_ERROR_FILE (common/torch_error_file.h),
  // when it failed and wrote one; "" otherwise.
  std::string error_message;   // at most kMaxErrorMessage bytes (the head)
  std::string error_trace;     // at most kMaxErrorTrace bytes (the traceback's tail)
  DS_MESSAGE(WorkerExited);
};
struct Stop { uint32_t generation = 0; DS_MESSAGE(Stop); };
struct Stopped { uint32_t generation = 0; DS_MESSAGE(Stopped); };
struct Ping { DS_MESSAGE(Ping); };
struct Shutdown { DS_MESSAGE(Shutdown); };

struct StoreSet { std::string key; Bytes value; DS_MESSAGE(StoreSet); };
struct StoreGet { std::string key; uint32_t timeout_ms = 0; DS_MESSAGE(StoreGet); };
struct StoreAdd { std::string key; int64_t delta = 0; DS_MESSAGE(StoreAdd); };
struct StoreWait { std::vector<std::string> keys; uint32_t timeout_ms = 0; DS_MESSAGE(StoreWait); };
struct StoreOk { DS_MESSAGE(StoreOk); };
struct StoreValue { Bytes value; DS_MESSAGE(StoreValue); };
struct StoreInt { int64_t value = 0; DS_MESSAGE(StoreInt); };

#undef DS_MESSAGE

}  // namespace ds::msg
