// Status and Result<T>: errors as values (DESIGN.md, style rule 4).
//
// A Status is either OK or an error code with a human-readable message. Result<T> holds a value
// or a non-OK Status. Both are [[nodiscard]] so an ignored error is a compiler warning.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tunebus {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a user or a peer (malformed file, message, flag)
  kNotFound,            // a named trial, experiment, checkpoint or worker does not exist
  kFailedPrecondition,  // the request is valid but the current state forbids it
  kResourceExhausted,   // not enough capacity now (retry later)
  kUnavailable,         // a peer or a process could not be reached or started
  kCorruption,          // stored bytes failed validation (torn journal tail, bad checksum)
  kInternal,            // a bug: an invariant was broken
  kIoError,             // the filesystem or RocksDB failed
  kForbidden,           // policy forbids it: a key's role, a worker's --allow-command (last)
};

/// Stable lower-case name of a code, used in error replies on the wire ("invalid_argument").
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Forbidden(std::string m) { return {StatusCode::kForbidden, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid_argument: <message>", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// A value of type T or an error Status. REQUIRES: value() only when ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit on purpose
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: REQUIRES !status.ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tunebus
