#include "launcher/failover/etcd_transport.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <charconv>
#include <chrono>
#include <limits>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "launcher/failover/etcd_io.h"
#include "launcher/failover/etcd_json.h"

namespace ds::etcd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

using detail::Deadline;
using detail::Io;

namespace {

bool IsIp(const std::string& host) {
  ErrorCode ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// The gateway's gRPC code as our Status code.
Status FromGrpc(int code, const std::string& message) {
  switch (code) {
    case 3: return Status::InvalidArgument(message);
    case 4: return Status::Timeout(message);
    case 5: return Status::NotFound(message);
    case 7: case 16: return Status::PermissionDenied(message);
    case 14: return Status::Unavailable(message);
    default: return Status::Aborted(message);
  }
}

// True when the server's TLS alert says it refused this client's
// certificate (none, or not signed by a CA it trusts). Under TLS 1.3 that
// comes after the handshake, at the first read or write.
bool CertificateRefused(const ErrorCode& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return false;
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  return reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
         reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA;
}

}  // namespace

namespace detail {

Deadline After(double s) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

Status HttpError(unsigned status, const std::string& body) {
  if (auto e = DecodeError(body)) return FromGrpc(e->code, fmt::format("{} (code {})", e->message, e->code));
  const std::string shown = body.substr(0, 200);
  return status >= 500 ? Status::Unavailable(fmt::format("HTTP {}: {}", status, shown))
                       : Status::Aborted(fmt::format("HTTP {}: {}", status, shown));
}

Status IoError(const char* step, const ErrorCode& ec, size_t max_body) {
  if (ec == http::error::body_limit || ec == http::error::header_limit)
    return Status::InvalidArgument(fmt::format("{}: the reply is larger than {} bytes, the most accepted", step, max_body));
  if (CertificateRefused(ec))
    return Status::PermissionDenied(
        fmt::format("{}: {} (etcd refused this client's certificate: expected one the job's CA signed)", step,
                    ec.message()));
  return Status::Unavailable(fmt::format("{}: {}", step, ec.message()));
}

Status Late(const char* step, double timeout_s) {
  return Status::Timeout(fmt::format("{}: no answer within {} s", step, timeout_s));
}

}  // namespace detail

namespace {

using detail::After;
using detail::HttpError;
using detail::IoError;
using detail::Late;

// Connects, with TLS and the server's name (or IP) checked against its certificate.
Result<std::unique_ptr<Io>> Connect(const Endpoint& ep, TlsContext* tls, double timeout_s, Deadline deadline) {
  auto io = std::make_unique<Io>();
  if (tls != nullptr) io->secure.emplace(io->ioc, tls->ctx);
  else io->plain.emplace(io->ioc);
  io->resolver.emplace(io->ioc);
  bool done = false;
  ErrorCode ec;
  tcp::resolver::results_type found;
  io->resolver->async_resolve(ep.host, std::to_string(ep.port), [&](ErrorCode e, tcp::resolver::results_type r) {
    ec = e, found = std::move(r), done = true;
  });
  if (!io->RunUntil(done, deadline)) return Late("resolve", timeout_s);
  if (ec) return Status::Unavailable(fmt::format("resolve {}: {}", ep.host, ec.message()));
  done = false;
  asio::async_connect(io->lowest(), found, [&](ErrorCode e, const tcp::endpoint&) { ec = e, done = true; });
  if (!io->RunUntil(done, deadline)) return Late("connect", timeout_s);
  if (ec) return Status::Unavailable(fmt::format("connect: {}", ec.message()));
  if (!io->secure) return io;
  SSL* ssl = io->secure->native_handle();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (IsIp(ep.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, ep.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, ep.host.c_str(), 0);
    SSL_set_tlsext_host_name(ssl, ep.host.c_str());
  }
  done = false;
  io->secure->async_handshake(ssl::stream_base::client, [&](ErrorCode e) { ec = e, done = true; });
  if (!io->RunUntil(done, deadline)) return Late("TLS handshake", timeout_s);
  if (ec) return IoError("TLS handshake", ec, 0);
  return io;
}

http::request<http::string_body> Request(const Endpoint& ep, std::string_view path, const std::string& body) {
  http::request<http::string_body> req{http::verb::post, std::string(path), 11};
  req.set(http::field::host, fmt::format("{}:{}", ep.host, ep.port));
  req.set(http::field::content_type, "application/json");
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  return req;
}

// Writes `req`; Unavailable/Timeout on failure.
Status Write(Io& io, const http::request<http::string_body>& req, double timeout_s, Deadline deadline) {
  bool done = false;
  ErrorCode ec;
  io.With([&](auto& s) { http::async_write(s, req, [&](ErrorCode e, size_t) { ec = e, done = true; }); });
  if (!io.RunUntil(done, deadline)) return Late("write", timeout_s);
  if (ec) return IoError("write", ec, 0);
  return Status::OK();
}

struct Reply {
  unsigned status = 0;
  std::string body;
  bool keep_alive = false;
};

// One request and its whole reply. `*nothing_came` tells a connection the
// server had closed (worth one more try on a fresh one) from a failed reply.
Result<Reply> Exchange(Io& io, const Endpoint& ep, std::string_view path, const std::string& body,
                       const TransportLimits& limits, Deadline deadline, bool* nothing_came) {
  *nothing_came = false;
  const auto req = Request(ep, path, body);
  if (Status st = Write(io, req, limits.timeout_s, deadline); !st.ok()) {
    *nothing_came = st.code() == Status::Code::kUnavailable;
    return st;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(limits.max_body);
  parser.header_limit(64 * 1024);
  bool done = false;
  ErrorCode ec;
  io.With([&](auto& s) { http::async_read(s, io.buf, parser, [&](ErrorCode e, size_t) { ec = e, done = true; }); });
  if (!io.RunUntil(done, deadline)) return Late("reply", limits.timeout_s);
  if (ec) {
    *nothing_came = !parser.got_some() && ec != http::error::body_limit;
    return IoError("read", ec, limits.max_body);
  }
  Reply r;
  r.status = parser.get().result_int();
  r.keep_alive = parser.get().keep_alive();
  r.body = std::move(parser.get().body());
  return r;
}

}  // namespace

std::string Endpoint::Url() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", tls ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

Result<Endpoint> Endpoint::Parse(std::string_view text, bool tls_default) {
  const auto bad = [&] {
    return Status::InvalidArgument(fmt::format("etcd endpoint '{}': expected [http(s)://]HOST:PORT", text));
  };
  Endpoint e;
  e.tls = tls_default;
  std::string_view rest = text;
  if (rest.starts_with("https://")) e.tls = true, rest.remove_prefix(8);
  else if (rest.starts_with("http://")) e.tls = false, rest.remove_prefix(7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad();
  std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();
  }
  unsigned p = 0;
  const auto r = std::from_chars(port.data(), port.data() + port.size(), p);
  if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p == 0 || p > 65535) return bad();
  e.host = std::string(host);
  e.port = static_cast<uint16_t>(p);
  return e;
}

Result<std::shared_ptr<TlsContext>> LoadTls(const TlsFiles& files) {
  if (files.cert_file.empty() != files.key_file.empty())
    return Status::InvalidArgument(fmt::format("etcd TLS: a client certificate needs its key (certificate '{}', key '{}')",
                                               files.cert_file, files.key_file));
  auto tls = std::make_shared<TlsContext>();
  tls->ctx.set_verify_mode(ssl::verify_peer);
  ErrorCode ec;
  if (!files.ca_file.empty()) tls->ctx.load_verify_file(files.ca_file, ec);
  else tls->ctx.set_default_verify_paths(ec);  // the system's CAs (a site etcd)
  if (ec) return Status::InvalidArgument(fmt::format("etcd TLS CA file {}: {}", files.ca_file, ec.message()));
  if (!files.cert_file.empty()) tls->ctx.use_certificate_chain_file(files.cert_file, ec);
  if (ec) return Status::InvalidArgument(fmt::format("etcd TLS certificate {}: {}", files.cert_file, ec.message()));
  if (!files.key_file.empty()) tls->ctx.use_private_key_file(files.key_file, ssl::context::pem, ec);
  if (ec) return Status::InvalidArgument(fmt::format("etcd TLS key {}: {}", files.key_file, ec.message()));
  return tls;
}

EtcdConnection::EtcdConnection(Endpoint endpoint, std::shared_ptr<TlsContext> tls, TransportLimits limits)
    : endpoint_(std::move(endpoint)), tls_(std::move(tls)), limits_(limits) {}

EtcdConnection::~EtcdConnection() = default;

Result<std::string> EtcdConnection::Post(std::string_view path, const std::string& body) {
  const std::string where = endpoint_.Url() + std::string(path);
  const Deadline deadline = After(limits_.timeout_s);
  for (int attempt = 0;; ++attempt) {
    if (!io_) {
      auto io = Connect(endpoint_, endpoint_.tls ? tls_.get() : nullptr, limits_.timeout_s, deadline);
      if (!io.ok()) return io.status().Prefixed(where);
      io_ = std::move(io).value();
    }
    bool nothing_came = false;
    Result<Reply> reply = Exchange(*io_, endpoint_, path, body, limits_, deadline, &nothing_came);
    if (!reply.ok()) {
      const bool stale = io_->reused && nothing_came;
      io_.reset();
      if (stale && attempt == 0) continue;  // the server had closed the kept-alive connection
      return reply.status().Prefixed(where);
    }
    if (!reply->keep_alive) io_.reset();
    else io_->reused = true;
    if (reply->status != 200) return HttpError(reply->status, reply->body).Prefixed(where);
    return std::move(reply->body);
  }
}

Result<std::unique_ptr<EtcdStream>> EtcdConnection::OpenStream(std::string_view path, const std::string& body) {
  const std::string where = endpoint_.Url() + std::string(path);
  const Deadline deadline = After(limits_.timeout_s);
  auto io = Connect(endpoint_, endpoint_.tls ? tls_.get() : nullptr, limits_.timeout_s, deadline);
  if (!io.ok()) return io.status().Prefixed(where);
  const auto req = Request(endpoint_, path, body);
  if (Status st = Write(**io, req, limits_.timeout_s, deadline); !st.ok()) return st.Prefixed(where);
  return detail::OpenHttpStream(std::move(io).value(), where, limits_.max_body, limits_.timeout_s, deadline);
}

}  // namespace ds::etcd
