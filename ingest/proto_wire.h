// The protobuf wire format, as Kiln's readers of serialized protos decode it (HloModuleProto,
// ingest/hlo_*; CompileOptionsProto, ingest/compile_options.cc): a bounds-checked cursor over one
// message (varints, fixed-width scalars, length-delimited fields, skipping of unknown fields and
// deprecated groups) and helpers for the repeated scalar fields (packed or not). Every read either
// succeeds or returns the status the reader's ErrorFn makes of the problem and its byte offset in
// the whole serialized proto.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace kiln::ingest::proto_wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
};

// The status a reader returns for malformed input: `detail` found at byte `offset`.
using ErrorFn = Status (*)(size_t offset, std::string_view detail);

inline Status MalformedHloModule(size_t offset, std::string_view detail) {
  return DataLoss("malformed HloModuleProto at byte " + std::to_string(offset) + ": " +
                  std::string(detail));
}

// Deprecated groups are the only recursive thing skipping can meet; their nesting is bounded.
inline constexpr size_t kMaxGroupDepth = 64;

class Reader {
 public:
  // `base` is the offset of data[0] in the whole serialized proto (for error messages).
  Reader(std::span<const uint8_t> data, size_t base, ErrorFn error = &MalformedHloModule)
      : data_(data), base_(base), error_(error) {}

  bool empty() const { return pos_ == data_.size(); }
  std::span<const uint8_t> rest() const { return data_.subspan(pos_); }
  size_t offset() const { return base_ + pos_; }

  Status Error(std::string_view message) const { return error_(offset(), message); }

  StatusOr<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (empty()) return Error("truncated varint");
      const uint8_t byte = data_[pos_++];
      if (shift == 63 && byte > 1) return Error("varint overflows 64 bits");
      value |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Error("varint longer than 10 bytes");
  }

  StatusOr<Field> Key() {
    KILN_ASSIGN_OR_RETURN(uint64_t key, Varint());
    const uint64_t number = key >> 3;
    const uint32_t type = static_cast<uint32_t>(key & 7);
    if (number == 0 || number > 0x1FFFFFFF) {
      return Error("invalid field number " + std::to_string(number));
    }
    if (type > kFixed32) return Error("invalid wire type " + std::to_string(type));
    return Field{static_cast<uint32_t>(number), static_cast<WireType>(type)};
  }

  StatusOr<std::span<const uint8_t>> Bytes(uint64_t count) {
    if (count > data_.size() - pos_) {
      return Error("field of " + std::to_string(count) + " bytes overruns the message (" +
                   std::to_string(data_.size() - pos_) + " bytes remain)");
    }
    std::span<const uint8_t> out = data_.subspan(pos_, static_cast<size_t>(count));
    pos_ += static_cast<size_t>(count);
    return out;
  }

  // A length-delimited payload, as a Reader positioned at its start.
  StatusOr<Reader> Sub() {
    KILN_ASSIGN_OR_RETURN(uint64_t length, Varint());
    const size_t start = offset();
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, Bytes(length));
    return Reader(bytes, start, error_);
  }

  // A length-delimited payload's bytes.
  StatusOr<std::span<const uint8_t>> LengthDelimited() {
    KILN_ASSIGN_OR_RETURN(uint64_t length, Varint());
    return Bytes(length);
  }

  StatusOr<std::string> String() {
    KILN_ASSIGN_OR_RETURN(uint64_t length, Varint());
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, Bytes(length));
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  StatusOr<uint32_t> Fixed32() {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, Bytes(4));
    return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
  }

  StatusOr<uint64_t> Fixed64() {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, Bytes(8));
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | b[static_cast<size_t>(i)];
    return v;
  }

  // Skips the value of `field`, including (deprecated) groups up to their matching end.
  Status Skip(const Field& field) {
    switch (field.type) {
      case kVarint:
        return Varint().status();
      case kFixed64:
        return Bytes(8).status();
      case kFixed32:
        return Bytes(4).status();
      case kLengthDelimited: {
        KILN_ASSIGN_OR_RETURN(uint64_t length, Varint());
        return Bytes(length).status();
      }
      case kEndGroup:
        return Error("unmatched end-group tag for field " + std::to_string(field.number));
      case kStartGroup: {
        std::vector<uint32_t> open = {field.number};
        while (!open.empty()) {
          KILN_ASSIGN_OR_RETURN(Field inner, Key());
          if (inner.type == kEndGroup) {
            if (inner.number != open.back()) return Error("mismatched end-group tag");
            open.pop_back();
          } else if (inner.type == kStartGroup) {
            if (open.size() >= kMaxGroupDepth) return Error("groups nested too deeply");
            open.push_back(inner.number);
          } else {
            KILN_RETURN_IF_ERROR(Skip(inner));
          }
        }
        return Status::Ok();
      }
    }
    return Error("invalid wire type");
  }

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  size_t base_ = 0;
  ErrorFn error_;
};

// Decodes a message field by field: `handle(field, reader)` returns true if it consumed the value,
// false to have it skipped.
template <typename Handler>
Status ForEachField(Reader reader, Handler&& handle) {
  while (!reader.empty()) {
    KILN_ASSIGN_OR_RETURN(Field field, reader.Key());
    KILN_ASSIGN_OR_RETURN(bool consumed, handle(field, reader));
    if (!consumed) KILN_RETURN_IF_ERROR(reader.Skip(field));
  }
  return Status::Ok();
}

// A repeated varint field (int32/int64/uint*/bool/enum), packed or not, appended to `out`.
inline Status ReadVarints(const Field& f, Reader& r, std::vector<int64_t>& out) {
  if (f.type == kVarint) {
    KILN_ASSIGN_OR_RETURN(uint64_t v, r.Varint());
    out.push_back(static_cast<int64_t>(v));
    return Status::Ok();
  }
  if (f.type != kLengthDelimited) return r.Error("repeated integer field with a wrong wire type");
  KILN_ASSIGN_OR_RETURN(Reader packed, r.Sub());
  while (!packed.empty()) {
    KILN_ASSIGN_OR_RETURN(uint64_t v, packed.Varint());
    out.push_back(static_cast<int64_t>(v));
  }
  return Status::Ok();
}

// A repeated fixed-width field (float: 4 bytes, double: 8), packed or not, appended to `out` as
// little-endian bytes.
inline Status ReadFixed(const Field& f, Reader& r, size_t width, std::vector<uint8_t>& out) {
  const WireType single = width == 4 ? kFixed32 : kFixed64;
  if (f.type == single) {
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, r.Bytes(width));
    out.insert(out.end(), b.begin(), b.end());
    return Status::Ok();
  }
  if (f.type != kLengthDelimited) return r.Error("repeated float field with a wrong wire type");
  KILN_ASSIGN_OR_RETURN(uint64_t length, r.Varint());
  if (length % width != 0) return r.Error("packed float field length is not a multiple of width");
  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, r.Bytes(length));
  out.insert(out.end(), b.begin(), b.end());
  return Status::Ok();
}

}  // namespace kiln::ingest::proto_wire
