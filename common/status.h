// Status and Result<T>: the error policy of launcher/ and agent/.
//
// A Status is either OK or carries a code and a message a person can act on
// (it names the file:line, host or key and says what was expected). Functions
// that can fail return Status or Result<T> and callers return early on error.
// Only main.cc turns a Status into a process exit code. Value types, not
// thread-safe to mutate concurrently.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ds {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kIOError, kUnavailable,
                    kTimeout, kPermissionDenied, kAborted, kInternal };

  Status() = default;  // OK

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status IOError(std::string m) { return {Code::kIOError, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<prefix>: <message>".
  Status Prefixed(const std::string& prefix) const {
    return ok() ? *this : Status(code_, prefix + ": " + message_);
  }

 private:
  Status(Code c, std::string m) : code_(c), message_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// Result<T> holds a T or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}       // NOLINT: must not be OK

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ds

// Early return helpers.
#define DS_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::ds::Status _st = (expr);                \
    if (!_st.ok()) return _st;                \
  } while (0)

#define DS_CONCAT_INNER(a, b) a##b
#define DS_CONCAT(a, b) DS_CONCAT_INNER(a, b)
#define DS_ASSIGN_OR_RETURN(lhs, expr)                          \
  auto DS_CONCAT(_res_, __LINE__) = (expr);                     \
  if (!DS_CONCAT(_res_, __LINE__).ok())                         \
    return DS_CONCAT(_res_, __LINE__).status();                 \
  lhs = std::move(DS_CONCAT(_res_, __LINE__)).value()
