// One etcd endpoint over HTTP/1.1 (Boost.Beast), plain or TLS with a client
// certificate: POSTs of JSON to the v3 gateway and its streamed replies
// (watch). Blocking calls with a deadline each: every operation runs on the
// connection's own io_context for at most the time left, so a dead or
// silent endpoint costs the timeout, never more. Replies are bounded: a body
// (or one streamed message) over `max_body` bytes fails the call. Not
// thread-safe: one thread per EtcdConnection. EtcdClient (etcd_client.h) is
// what the rest of the code uses; this is its one-endpoint part.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ds::etcd {

// "https://10.0.0.1:2379", "http://h:2379", or "h:2379" (https when the
// client has TLS files, else http). IPv6 hosts in brackets.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  std::string Url() const;
  // InvalidArgument "etcd endpoint 'x': expected [http(s)://]HOST:PORT".
  static Result<Endpoint> Parse(std::string_view text, bool tls_default);
};

// The client's TLS material, as PEM files. All empty: no TLS.
struct TlsFiles {
  std::string ca_file;    // the CA that signed the servers' certificates
  std::string cert_file;  // this client's certificate (etcd --client-cert-auth asks for one)
  std::string key_file;   // its private key
  bool empty() const { return ca_file.empty() && cert_file.empty() && key_file.empty(); }
};

// The TLS context all connections of a client share (loaded once).
class TlsContext;
namespace detail {
struct Io;  // one open connection (etcd_transport.cc)
}
// Loads the files; InvalidArgument naming the file and OpenSSL's reason.
Result<std::shared_ptr<TlsContext>> LoadTls(const TlsFiles& files);

struct TransportLimits {
  double timeout_s = 5;           // per call, connecting included
  size_t max_body = 4u << 20;     // the largest reply body or streamed message
};

// A streamed reply (the watch): one JSON message per Next.
class EtcdStream {
 public:
  virtual ~EtcdStream() = default;
  // The next message, waiting up to `timeout_s`; Timeout when none came in
  // time (the stream stays open: call again); Unavailable when the stream
  // ended or broke; InvalidArgument when a message exceeds the bound.
  virtual Result<std::string> Next(double timeout_s) = 0;
};

class EtcdConnection {
 public:
  // No I/O yet: the first call connects. `tls` null for http endpoints.
  EtcdConnection(Endpoint endpoint, std::shared_ptr<TlsContext> tls, TransportLimits limits);
  ~EtcdConnection();
  EtcdConnection(const EtcdConnection&) = delete;
  EtcdConnection& operator=(const EtcdConnection&) = delete;

  // POSTs `body` to `path` and returns the reply body when the status is
  // 200. Errors begin with "<url><path>: " and map the gateway's gRPC code:
  // 14 (unavailable: no leader, stopping) -> Unavailable, 5 -> NotFound, 3
  // -> InvalidArgument, 7/16 -> PermissionDenied, 4 -> Timeout, others ->
  // Aborted; failing to connect, TLS and I/O errors -> Unavailable; the
  // deadline -> Timeout. After any I/O error the connection is dropped (the
  // next call connects again).
  Result<std::string> Post(std::string_view path, const std::string& body);
  // Opens a streamed POST on its own connection (the watch).
  Result<std::unique_ptr<EtcdStream>> OpenStream(std::string_view path, const std::string& body);

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Endpoint endpoint_;
  std::shared_ptr<TlsContext> tls_;
  TransportLimits limits_;
  std::unique_ptr<detail::Io> io_;  // the kept-alive connection, null between
};

}  // namespace ds::etcd
