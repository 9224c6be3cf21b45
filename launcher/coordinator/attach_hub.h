// AttachHub: the `dslaunch attach` clients of this coordinator (role
// attach, wire_format.md "Attach"). Each gets Attached when it joins, then
// every line the terminal is shown (it follows LogMux), the status line
// when its text changes, and AttachEnd when the job ends, after which its
// connection closes once written. A client whose connection holds more than
// kMaxQueued bytes loses lines, never the coordinator's memory: they are
// counted, and when it has caught up one line says how many. It borrows the
// links it is given (shared), drops the closed ones. Not thread-safe: the
// coordinator's io thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "launcher/coordinator/agent_link.h"
#include "launcher/report/log_mux.h"
#include "wire/protocol.h"

namespace ds {

class AttachHub final : public LineFollower {
 public:
  static constexpr size_t kMaxQueued = 4u << 20;

  // A new client: sends `hello` and the status line last sent. After End,
  // it gets AttachEnd at once.
  void Add(std::shared_ptr<AgentLink> link, const msg::Attached& hello);
  void OnLine(int rank, const std::string& host, int local_rank, int stream, const std::string& line) override;
  void OnNotice(const std::string& line) override;
  // The status line's text: sent to every client when it changed.
  void OnStatus(const std::string& text);
  // The job ended: AttachEnd to every client, each closed once written.
  void End(int exit_code, const std::string& summary);
  size_t clients() const;

 private:
  struct Client {
    std::shared_ptr<AgentLink> link;
    uint64_t dropped = 0;  // lines it lost since it last caught up
  };
  void Line(const msg::AttachLine& m);
  void Prune();

  std::vector<Client> clients_;
  std::string status_;
  bool ended_ = false;
  msg::AttachEnd end_;
};

}  // namespace ds
