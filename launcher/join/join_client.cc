#include "launcher/join/join_client.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "wire/client_conn.h"

namespace ds {
namespace {

using std::chrono::steady_clock;

constexpr auto kRetryEvery = std::chrono::seconds(1);
constexpr auto kTryTimeout = std::chrono::seconds(10);  // one try: connect, proofs, answer (a host may be starting)

// One try: the rank, or why not. `retry` says whether another try may help
// (nobody listening yet, a connection cut short).
Result<int> TryJoin(const PerNodeLaunch& p, const std::string& endpoint, bool* retry) {
  *retry = true;
  const auto deadline = steady_clock::now() + kTryTimeout;
  DS_ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(endpoint, "", deadline));
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  msg::Hello hello{wire::Role::kJoin, host, p.job_id, 0};
  Status st = ClientHandshake(fd.get(), hello, PerNodeJoinToken(p), deadline);
  if (st.code() == Status::Code::kPermissionDenied || st.code() == Status::Code::kAborted ||
      st.code() == Status::Code::kInvalidArgument)
    *retry = false;  // the answer of whoever listens there: asking again gets the same
  DS_RETURN_IF_ERROR(st);
  auto f = ReadFrame(fd.get(), deadline, wire::kMaxHandshakeReply);
  if (Status e = ExpectFrame(f, wire::MsgType::kJoined, "join"); !e.ok()) {
    // After the proofs: a full job (InvalidArgument) is final; the ranks
    // left being promised to other joiners, or a cut connection, are not.
    *retry = e.code() != Status::Code::kInvalidArgument;
    return e;
  }
  DS_ASSIGN_OR_RETURN(msg::Joined j, msg::Joined::Decode(f->payload));
  *retry = false;
  if (j.node_index == 0 || static_cast<int>(j.node_index) >= p.nnodes)
    return Status::IOError(fmt::format("node rank {} is not between 1 and {}", j.node_index, p.nnodes - 1));
  return static_cast<int>(j.node_index);
}

}  // namespace

Result<int> JoinRendezvous(const PerNodeLaunch& p, const std::function<void(const std::string&)>& say) {
  const std::string endpoint = fmt::format("{}:{}", p.addr, p.port);
  const auto start = steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<steady_clock::duration>(
                                    std::chrono::duration<double>(p.conf.join_timeout));
  int tries = 0;
  while (true) {
    ++tries;
    bool retry = false;
    Result<int> rank = TryJoin(p, endpoint, &retry);
    if (rank.ok()) return rank;
    const Status::Code code = rank.status().code();
    if (code == Status::Code::kPermissionDenied || code == Status::Code::kAborted)
      return Status::PermissionDenied(fmt::format(
          "rendezvous {} refused this node: {} (its DSLAUNCH_SECRET_FILE differs from this node's, or it is another "
          "job's rendezvous: check --rdzv-endpoint and --rdzv-id)",
          endpoint, rank.status().message()));
    if (!retry)
      return Status::Unavailable(fmt::format("rendezvous {}: {}", endpoint, rank.status().message()));
    if (steady_clock::now() + kRetryEvery >= deadline)
      return Status::Unavailable(fmt::format(
          "rendezvous {}: no dslaunch hosting this job answered within {} s ({} tries; last: {}); start the same "
          "command on the node whose address is {} (--rdzv-conf join_timeout=SECONDS waits longer)",
          endpoint, p.conf.join_timeout, tries, rank.status().message(), p.addr));
    if (tries == 1) say(fmt::format("waiting for the node at {} to host the job ({})", endpoint, rank.status().message()));
    ::poll(nullptr, 0, static_cast<int>(std::chrono::milliseconds(kRetryEvery).count()));
  }
}

}  // namespace ds
