// Status and StatusOr: Kiln's error currency. Every fallible call returns one, and the PJRT layer
// turns a non-OK status into a PJRT_Error, so a failure deep in a kernel reaches Python as an
// exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kiln {

// Values match absl / PJRT_Error_Code so the PJRT layer can pass them through unchanged.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

  // Prefixes context (e.g. the op being compiled) while keeping the code.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : value_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(value_); }

  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> value_;
};

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

namespace kiln::status_internal {
inline Status AddContext(Status s) { return s; }
inline Status AddContext(Status s, std::string_view context) { return s.WithContext(context); }
}  // namespace kiln::status_internal

// The one way Kiln adds context to an error on its way up (as IREE's IREE_RETURN_IF_ERROR(expr,
// fmt)): KILN_RETURN_IF_ERROR(expr) returns a failed status as it is; KILN_RETURN_IF_ERROR(expr,
// context) returns it as "<context>: <message>", the context (a string) built only on failure.
// Each layer adds what it knows once: a lowering rule states the problem, the compiler names the
// op with its type and source line, the runner the failing step.
#define KILN_RETURN_IF_ERROR(expr, ...)                                                 \
  do {                                                                                  \
    ::kiln::Status kiln_status_ = (expr);                                               \
    if (!kiln_status_.ok()) {                                                           \
      return ::kiln::status_internal::AddContext(std::move(kiln_status_) __VA_OPT__(, ) \
                                                     __VA_ARGS__);                      \
    }                                                                                   \
  } while (0)

#define KILN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ...)                                  \
  auto tmp = (expr);                                                                     \
  if (!tmp.ok()) {                                                                       \
    return ::kiln::status_internal::AddContext(tmp.status() __VA_OPT__(, ) __VA_ARGS__); \
  }                                                                                      \
  lhs = std::move(tmp).value()

// KILN_ASSIGN_OR_RETURN(lhs, expr[, context]): lhs = expr's value, or return its error (with the
// context added, as KILN_RETURN_IF_ERROR).
#define KILN_ASSIGN_OR_RETURN(lhs, expr, ...)                            \
  KILN_ASSIGN_OR_RETURN_IMPL(KILN_CONCAT(kiln_statusor_, __LINE__), lhs, \
                             expr __VA_OPT__(, ) __VA_ARGS__)
