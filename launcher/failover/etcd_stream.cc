// The watch's streamed reply (etcd_transport.h's EtcdStream) over one
// connection of etcd_io.h.
#include <limits>
#include <utility>

#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "launcher/failover/etcd_io.h"

namespace ds::etcd::detail {
namespace {

namespace http = boost::beast::http;

// The watch's reply: read as it comes, one JSON message per line.
class HttpStream final : public EtcdStream {
 public:
  HttpStream(std::unique_ptr<Io> io, std::string where, size_t max) : io_(std::move(io)), where_(std::move(where)), max_(max) {
    parser_.body_limit(std::numeric_limits<std::uint64_t>::max());  // bounded per message instead
    parser_.header_limit(64 * 1024);
  }
  ~HttpStream() override { io_->Abort(); }

  // Reads the header: OK when the stream is open (HTTP 200).
  Status Begin(double timeout_s, Deadline deadline) {
    done_ = false;
    io_->With([&](auto& s) { http::async_read_header(s, io_->buf, parser_, [this](ErrorCode e, size_t) { ec_ = e, done_ = true; }); });
    if (!io_->RunUntil(done_, deadline)) return Late("stream header", timeout_s).Prefixed(where_);
    if (ec_) return IoError("stream header", ec_, max_).Prefixed(where_);
    if (parser_.get().result_int() == 200) return Status::OK();
    std::string body;  // the error reply, within the bound
    while (!ended_ && body.size() <= max_) {
      Result<std::string> part = Read(deadline, timeout_s);
      if (!part.ok()) break;
      body += *part;
    }
    return HttpError(parser_.get().result_int(), body).Prefixed(where_);
  }

  Result<std::string> Next(double timeout_s) override {
    const Deadline deadline = After(timeout_s);
    for (;;) {
      const size_t nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string msg = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        if (msg.find_first_not_of(" \r\t") == std::string::npos) continue;
        return msg;
      }
      if (pending_.size() > max_)
        return Status::InvalidArgument(
            fmt::format("{}: a streamed message is larger than {} bytes, the most accepted", where_, max_));
      if (ended_) {
        if (pending_.find_first_not_of(" \r\t") != std::string::npos) return std::exchange(pending_, "");
        return Status::Unavailable(fmt::format("{}: the stream ended", where_));
      }
      Result<std::string> part = Read(deadline, timeout_s, /*abort=*/false);
      if (!part.ok()) return part.status().code() == Status::Code::kTimeout ? part.status() : part.status().Prefixed(where_);
      pending_ += *part;
    }
  }

 private:
  // Some body bytes, or an error; on the deadline a read in flight stays in
  // flight unless `abort`.
  Result<std::string> Read(Deadline deadline, double timeout_s, bool abort = true) {
    if (!reading_) {
      reading_ = true, done_ = false;
      parser_.get().body().data = chunk_;
      parser_.get().body().size = sizeof(chunk_);
      io_->With([&](auto& s) {
        http::async_read_some(s, io_->buf, parser_, [this](ErrorCode e, size_t) { ec_ = e, done_ = true; });
      });
    }
    if (!io_->RunUntil(done_, deadline, abort)) {
      if (abort) reading_ = false, ended_ = true;
      return Status::Timeout(fmt::format("{}: no message within {} s", where_, timeout_s));
    }
    reading_ = false;
    const size_t got = sizeof(chunk_) - parser_.get().body().size;
    if (ec_ && ec_ != http::error::need_buffer) {
      ended_ = true;
      return IoError("stream", ec_, max_);
    }
    if (parser_.is_done()) ended_ = true;
    return std::string(chunk_, got);
  }

  std::unique_ptr<Io> io_;
  std::string where_;
  size_t max_;
  http::response_parser<http::buffer_body> parser_;
  char chunk_[16384];
  std::string pending_;
  bool reading_ = false, done_ = false, ended_ = false;
  ErrorCode ec_;
};

}  // namespace

Result<std::unique_ptr<EtcdStream>> OpenHttpStream(std::unique_ptr<Io> io, const std::string& where, size_t max_body,
                                                   double timeout_s, Deadline deadline) {
  auto stream = std::make_unique<HttpStream>(std::move(io), where, max_body);
  DS_RETURN_IF_ERROR(stream->Begin(timeout_s, deadline));
  return std::unique_ptr<EtcdStream>(std::move(stream));
}

}  // namespace ds::etcd::detail
