// Validation helpers for PJRT args structs. Callers pass *their* struct_size: Kiln accepts larger
// structs, rejects ones too small to hold the fields it reads or writes, and never touches bytes
// past the caller's size (jaxlib 0.10.2 passes a 185-byte PJRT_Device_MemoryStats_Args, for
// example).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "abi/pjrt_c_api.h"
#include "support/status.h"

// Bytes of `Type` up to and including `field`.
#define KILN_FIELD_END(Type, field) \
  (offsetof(Type, field) + sizeof(static_cast<Type*>(nullptr)->field))

namespace kiln::pjrt {

template <typename Args>
Status CheckArgs(const Args* args, size_t min_size, const char* function) {
  if (args == nullptr) return InvalidArgument(std::string(function) + ": args is NULL");
  if (args->struct_size < min_size) {
    return InvalidArgument(std::string(function) + ": args->struct_size is " +
                           std::to_string(args->struct_size) + " bytes; Kiln needs at least " +
                           std::to_string(min_size));
  }
  return Status::Ok();
}

// True when the caller's struct is large enough to contain `end` bytes (an optional trailing
// field).
template <typename Args>
bool HasBytes(const Args* args, size_t end) {
  return args->struct_size >= end;
}

// Reads a caller-supplied enum field as its raw integer value: callers may pass values outside the
// enumerators, and loading such a value as the enum type is undefined behaviour.
template <typename E>
int RawEnum(const E& field) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &field, sizeof(v));
  return v;
}

inline Status CheckNotNull(bool present, const char* function, const char* what) {
  if (!present) return InvalidArgument(std::string(function) + ": " + what + " is NULL");
  return Status::Ok();
}

}  // namespace kiln::pjrt

// Returns INVALID_ARGUMENT from the enclosing Status-returning lambda unless `args` is non-NULL and
// its struct_size covers `Type` up to `last_field`.
#define KILN_CHECK_ARGS(args, Type, last_field, function) \
  KILN_RETURN_IF_ERROR(::kiln::pjrt::CheckArgs(args, KILN_FIELD_END(Type, last_field), function))

#define KILN_CHECK_NOT_NULL(ptr, function) \
  KILN_RETURN_IF_ERROR(::kiln::pjrt::CheckNotNull((ptr) != nullptr, function, #ptr))
