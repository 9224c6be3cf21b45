// Coordinator: the job's control plane inside dslaunch, on one Boost.Asio
// io_context (single thread): it listens, authenticates every connection
// (HMAC challenge-response, wire/wire_format.md), serves the key/value
// store to workers, and hands agents to JobControl (job_control.h), the state
// machine that drives generations, stops and restarts. This class is the
// network edge only: sockets, handshakes, the store session, and the Asio
// timer JobControl keeps armed at its next deadline.
// Unauthenticated peers are held to a small budget: frames of at most
// wire::kMaxHandshakePayload bytes, the handshake timeout, and at most
// options.max_unauthenticated connections in the handshake at once (the next
// wait in the listen backlog, unaccepted, until one of those leaves the
// handshake; counted). When accept fails for want of descriptors
// (EMFILE, ENFILE, ENOBUFS, ENOMEM) it retries after a back-off of 100 ms,
// doubling to 1 s, instead of at once; connections wait in the listen backlog.
// In the per-node form's join (options.join_key), a client of role join that
// proves the join key gets its node rank (JoinOrder) in a Joined frame and
// is closed; it never becomes an agent on that connection.
// Refusals are logged through RejectLog (rate-limited), peer strings Printable().
// The listening socket and every accepted one are close-on-exec from birth
// (socket/accept4 with SOCK_CLOEXEC, not Asio's open/accept), so no program
// dslaunch starts can hold the job's port.
// Not thread-safe: call only from the io thread (or before run()); the
// counters below may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "launcher/config/plan.h"
#include "launcher/coordinator/deadline_timer.h"
#include "launcher/coordinator/frame_conn.h"
#include "launcher/coordinator/job_control.h"
#include "launcher/coordinator/join_order.h"
#include "launcher/coordinator/kv_store.h"
#include "launcher/coordinator/reject_log.h"
#include "launcher/coordinator/store_service.h"
#include "launcher/report/job_record.h"
#include "wire/protocol.h"

namespace ds {

class Coordinator {
 public:
  // `plan` and `record` must outlive the coordinator.
  Coordinator(asio::io_context& io, const LaunchPlan& plan, CoordinatorOptions options, JobRecord& record);
  ~Coordinator();

  // Binds and listens. Error: "listen 127.0.0.1:0: <reason>".
  Status Listen();
  // "host:port" agents and store clients connect to (after Listen).
  std::string address() const;
  int port() const;
  // Begins the job: the register deadline and the heartbeats; from now on
  // `fleet` (which must outlive the coordinator) hears of agents registered
  // and lost (FleetEvents).
  void Start(FleetEvents& fleet) { control_.Start(address(), fleet); }
  // Before Start, taking over a job whose coordinator was lost (JobControl::Adopt).
  Status Adopt(const JobState& s) { return control_.Adopt(s); }
  // Stops the job because of a signal to dslaunch (exit code 128+sig).
  void RequestStop(int signal_number) { control_.RequestStop(signal_number); }
  // Ends the job now with a failure that is not a worker's (e.g. an agent
  // process that died before registering).
  void Abort(const std::string& host, const std::string& what, int exit_code) {
    control_.Abort(host, what, exit_code);
  }
  // Runs (posted to the io_context) once the job is over and every agent was
  // told to shut down; the listener is closed by then.
  void OnDone(std::function<void()> cb) { on_done_ = std::move(cb); }
  // A fresh agent token for `node` alone (or `token` when given: the
  // per-node form's, derived from the shared secret): the key its agent
  // authenticates with (HMAC) instead of the job secret, which never leaves
  // dslaunch. It registers the node once and is spent then; a newer token
  // replaces an older one.
  // Its AttachKey (wire_format.md "Attach") opens the attach role from then
  // on, for the job's life.
  std::string EnrollAgent(int node, std::string token = "");
  // An authenticated `dslaunch attach` client (role attach), on the io
  // thread; without a handler the role is refused. It sends nothing.
  void OnAttach(std::function<void(std::shared_ptr<FrameConn>)> cb) { on_attach_ = std::move(cb); }  // Tells registered agent `node` to start other nodes' agents (launch tree).
  void StartAgents(int node, const msg::StartAgents& m) { control_.StartAgents(node, m); }
  const JobControl& control() const { return control_; }
  // The job's durable state after each transition (JobControl::OnStateChange),
  // on the io thread.
  void OnStateChange(std::function<void(const JobState&)> cb) { control_.OnStateChange(std::move(cb)); }
  // Every frame to an agent fenced with the leader's token (JobControl::SetFencing).
  void SetFencing(std::function<uint64_t()> token, std::function<Clock::time_point()> heard_by_etcd) {
    control_.SetFencing(std::move(token), std::move(heard_by_etcd));
  }
  // Where agents look for a leader when this one is lost (JobControl::SetCoordinators).
  void SetCoordinators(std::vector<std::string> addresses) { control_.SetCoordinators(std::move(addresses)); }
  CoordState state() const { return control_.state(); }
  // Times accepting paused because max_unauthenticated were in the handshake.
  uint64_t accept_pauses() const { return accept_pauses_; }
  // Times accept backed off for want of file descriptors.
  uint64_t accept_backoffs() const { return accept_backoffs_; }
  // Store clients blocked in a get or wait now.
  size_t store_waiters() const { return store_.num_waiters(); }

 private:
  struct Pending;

  void Accept();
  void OnAcceptError(const boost::system::error_code& ec);
  void OnAccepted(asio::ip::tcp::socket sock);
  void LeaveHandshake(Pending& p);
  void OnHandshakeFrame(const std::shared_ptr<Pending>& p, Frame f);
  void OnHello(const std::shared_ptr<Pending>& p, const Frame& f);
  void OnAuth(const std::shared_ptr<Pending>& p, const Frame& f);
  void OnAgentFrame(const std::shared_ptr<Pending>& p, const Frame& f);
  void OnJoin(const std::shared_ptr<Pending>& p);
  Status Adopt(const asio::ip::tcp::endpoint& ep);
  void Reject(const std::shared_ptr<Pending>& p, wire::ErrorCode code, const std::string& why);
  void Drop(const std::shared_ptr<Pending>& p, const std::string& reason, const std::string& why);
  void Finished();

  asio::io_context& io_;
  CoordinatorOptions opt_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp protocol_ = asio::ip::tcp::v4();  // the listening socket's (v4 or v6), for accepted sockets
  asio::steady_timer accept_timer_;          // the back-off after EMFILE & co.
  std::chrono::milliseconds accept_backoff_{0};  // 0: not backing off
  int unauthenticated_ = 0;                  // connections in the handshake now
  bool accept_paused_ = false;               // max_unauthenticated reached: not accepting
  std::atomic<uint64_t> accept_pauses_{0};
  std::atomic<uint64_t> accept_backoffs_{0};
  RejectLog reject_log_;
  AsioDeadlineTimer timer_;
  KvStore store_;
  StoreService store_service_;
  int plan_nodes_;                           // nodes and standbys: the join form's --nnodes (MAX)
  JobControl control_;
  std::optional<JoinOrder> join_order_;      // the join form's ranks (options.join_key set)
  std::function<void()> on_done_;
  std::map<int, std::string> agent_tokens_;  // by node: the token it may register with once
  std::function<void(std::shared_ptr<FrameConn>)> on_attach_;
  std::map<uint32_t, std::string> attach_keys_;  // by node (and wire::kAttachLeaderNode): AttachKey
};

}  // namespace ds
