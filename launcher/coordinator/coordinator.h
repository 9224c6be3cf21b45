// Coordinator: the job's control plane inside dslaunch, on one Boost.Asio
// io_context (single thread): it listens, authenticates every connection
// (HMAC challenge-response, common/wire_format.md), serves the key/value
// store to workers, and hands agents to JobControl (job_control.h), the state
// machine that drives generations, stops and restarts. This class is the
// network edge only: sockets, handshakes, the store session, and the Asio
// timer JobControl keeps armed at its next deadline.
// Not thread-safe: call only from the io thread (or before run()).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/asio.h"
#include "common/protocol.h"
#include "launcher/config/plan.h"
#include "launcher/coordinator/deadline_timer.h"
#include "launcher/coordinator/frame_conn.h"
#include "launcher/coordinator/job_control.h"
#include "launcher/coordinator/kv_store.h"
#include "launcher/coordinator/store_service.h"
#include "launcher/report/job_record.h"

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
  // Begins the job: the register deadline and the heartbeats.
  void Start() { control_.Start(address()); }
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
  const JobControl& control() const { return control_; }
  CoordState state() const { return control_.state(); }

 private:
  struct Pending;

  void Accept();
  void OnAccepted(asio::ip::tcp::socket sock);
  void OnHandshakeFrame(const std::shared_ptr<Pending>& p, Frame f);
  void OnHello(const std::shared_ptr<Pending>& p, const Frame& f);
  void OnAuth(const std::shared_ptr<Pending>& p, const Frame& f);
  void OnAgentFrame(const std::shared_ptr<Pending>& p, const Frame& f);
  void Reject(const std::shared_ptr<Pending>& p, wire::ErrorCode code, const std::string& why);
  void Finished();

  asio::io_context& io_;
  CoordinatorOptions opt_;
  asio::ip::tcp::acceptor acceptor_;
  AsioDeadlineTimer timer_;
  KvStore store_;
  StoreService store_service_;
  JobControl control_;
  std::function<void()> on_done_;
};

}  // namespace ds
