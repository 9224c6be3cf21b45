// AcceptLoop: the bounded accept loop the launcher's two small servers share
// (status_server.h: a Unix socket; metrics_server.h: TCP). It owns a bound,
// listening socket, waits on it on the io_context without blocking it,
// accepts with accept4 (close-on-exec and non-blocking from birth) and hands
// each connection's descriptor to `on_accept`. At most `max_open`
// connections are open at once: at the limit it stops waiting on the
// listener, so more connections wait in the kernel's backlog, unaccepted,
// and resumes when the server reports one Closed(), unless the server can
// make room: then a connection arriving at the limit asks `make_room` to
// close one it holds (the metrics server's oldest that has not sent a whole
// request head), so idle connections never keep a real one out. It reads
// and writes nothing itself: a connection's budget (its deadline, what it
// may send) is its server's. Not thread-safe: the io thread only (or before run()).
#pragma once

#include <functional>
#include <memory>

#include "common/asio.h"
#include "common/status.h"
#include "common/unique_fd.h"

namespace ds {

class AcceptLoop {
 public:
  // `on_accept` runs on the io thread with each accepted connection; the
  // server must call Closed() once for each when it ends.
  // `make_room`, where given, is called at the limit with a connection
  // waiting: true = it closed one of its connections (its Closed() follows),
  // so the waiting one is accepted now; false = the waiting one stays in the
  // backlog until a Closed().
  AcceptLoop(asio::io_context& io, int max_open, std::function<void(UniqueFd)> on_accept,
             std::function<bool()> make_room = nullptr);
  ~AcceptLoop();  // Stop()

  // Adopts `listener` (bound and listening) and starts accepting. Error:
  // the io_context could not take the descriptor (its reason).
  Status Start(UniqueFd listener);
  // A connection handed to on_accept has ended: one more may be accepted.
  void Closed();
  // Closes the listener; nothing more is accepted, a wait in flight ends
  // without calling on_accept. Connections already handed over are the server's.
  void Stop();
  bool listening() const { return listener_.is_open(); }
  int open_connections() const { return open_; }

 private:
  void Wait();

  asio::posix::stream_descriptor listener_;
  const int max_open_;
  std::function<void(UniqueFd)> on_accept_;
  std::function<bool()> make_room_;
  int open_ = 0;  // handed to on_accept and not yet Closed(): past max_open_ only by closes in flight
  bool waiting_ = false;  // an async_wait on the listener is pending
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // handlers check it after Stop/destruction
};

}  // namespace ds
