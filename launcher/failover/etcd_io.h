// Inside etcd_transport: one open connection (its own io_context, the
// socket, TLS over it) and what the one-shot calls and the streamed reply
// (etcd_stream.cc) share: deadlines and the errors they make. Not part of
// the interface; included by etcd_transport.cc and etcd_stream.cc only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "common/status.h"
#include "launcher/failover/etcd_transport.h"

namespace ds::etcd {

class TlsContext {
 public:
  boost::asio::ssl::context ctx{boost::asio::ssl::context::tls_client};
};

namespace detail {

using Deadline = std::chrono::steady_clock::time_point;
using ErrorCode = boost::system::error_code;

// One open connection: its own io_context, the socket, TLS over it when asked.
struct Io {
  boost::asio::io_context ioc;
  std::optional<boost::asio::ip::tcp::resolver> resolver;
  std::optional<boost::asio::ip::tcp::socket> plain;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> secure;
  boost::beast::flat_buffer buf;
  bool reused = false;  // served a request before: the server may have closed it since

  boost::asio::ip::tcp::socket& lowest() { return secure ? secure->next_layer() : *plain; }
  template <class F>
  void With(F&& f) {
    if (secure) f(*secure);
    else f(*plain);
  }
  // Closes the socket and runs what is pending to its end (the handlers see
  // operation_aborted), so nothing refers to the caller's locals afterwards.
  void Abort() {
    ErrorCode ignored;
    if (resolver) resolver->cancel();
    lowest().close(ignored);
    ioc.restart();
    ioc.run();
  }
  // Runs until `done` or the deadline. On the deadline: false, and with
  // `abort` the operation is ended (Abort), else it stays pending.
  bool RunUntil(const bool& done, Deadline deadline, bool abort = true) {
    while (!done) {
      if (ioc.stopped()) ioc.restart();
      if (std::chrono::steady_clock::now() >= deadline ||
          (ioc.run_one_until(deadline) == 0 && ioc.stopped() && !done)) {
        if (done) break;
        if (abort) Abort();
        return false;
      }
    }
    return true;
  }
};


// The deadline `s` seconds from now.
Deadline After(double s);
// A non-200 reply as a Status (the gateway's gRPC code mapped, else the HTTP status).
Status HttpError(unsigned status, const std::string& body);
// An I/O error of `step` as a Status: the bound, a refused client certificate, else Unavailable.
Status IoError(const char* step, const ErrorCode& ec, size_t max_body);
// The deadline passed during `step`.
Status Late(const char* step, double timeout_s);
// Reads the streamed reply's header on `io` (the request written): the
// stream when it is HTTP 200, else the error reply as a Status.
Result<std::unique_ptr<EtcdStream>> OpenHttpStream(std::unique_ptr<Io> io, const std::string& where, size_t max_body,
                                                   double timeout_s, Deadline deadline);

}  // namespace detail

}  // namespace ds::etcd
