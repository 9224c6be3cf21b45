#include "launcher/coordinator/attach_hub.h"

#include <algorithm>

#include <fmt/format.h>

namespace ds {

void AttachHub::Add(std::shared_ptr<AgentLink> link, const msg::Attached& hello) {
  link->Send(wire::MsgType::kAttached, hello.Encode());
  if (ended_) {
    link->Send(wire::MsgType::kAttachEnd, end_.Encode());
    link->Close("the job ended", /*flush=*/true);
    return;
  }
  if (!status_.empty()) link->Send(wire::MsgType::kAttachStatus, msg::AttachStatus{status_}.Encode());
  Prune();
  clients_.push_back({std::move(link), 0});
}

void AttachHub::OnLine(int rank, const std::string& host, int local_rank, int stream, const std::string& line) {
  Line({rank, host, local_rank, static_cast<uint8_t>(stream), line});
}

void AttachHub::OnNotice(const std::string& line) { Line({-1, "", -1, 2, line}); }

void AttachHub::Line(const msg::AttachLine& m) {
  if (clients_.empty()) return;
  const Bytes payload = m.Encode();
  for (Client& c : clients_) {
    if (c.link->closed()) continue;
    if (c.link->queued_bytes() > kMaxQueued) {
      ++c.dropped;
      continue;
    }
    if (c.dropped > 0) {
      const std::string gap = fmt::format("dslaunch: {} line{} not shown here (this attach fell behind)", c.dropped,
                                          c.dropped == 1 ? "" : "s");
      c.link->Send(wire::MsgType::kAttachLine, msg::AttachLine{-1, "", -1, 2, gap}.Encode());
      c.dropped = 0;
    }
    c.link->Send(wire::MsgType::kAttachLine, payload);
  }
}

void AttachHub::OnStatus(const std::string& text) {
  if (text == status_) return;
  status_ = text;
  const Bytes payload = msg::AttachStatus{text}.Encode();
  for (Client& c : clients_)
    if (!c.link->closed() && c.link->queued_bytes() <= kMaxQueued) c.link->Send(wire::MsgType::kAttachStatus, payload);
}

void AttachHub::End(int exit_code, const std::string& summary) {
  if (ended_) return;
  ended_ = true;
  end_ = {exit_code, summary};
  const Bytes payload = end_.Encode();
  for (Client& c : clients_) {  // the end is never dropped: a client behind waits for it
    c.link->Send(wire::MsgType::kAttachEnd, payload);
    c.link->Close("the job ended", /*flush=*/true);
  }
  clients_.clear();
}

size_t AttachHub::clients() const {
  return static_cast<size_t>(
      std::count_if(clients_.begin(), clients_.end(), [](const Client& c) { return !c.link->closed(); }));
}

void AttachHub::Prune() {
  clients_.erase(std::remove_if(clients_.begin(), clients_.end(), [](const Client& c) { return c.link->closed(); }),
                 clients_.end());
}

}  // namespace ds
