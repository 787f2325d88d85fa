// The protobuf wire format written, the inverse of ingest/proto_wire.h's Reader: an append-only
// message builder for Kiln's writers of serialized protos (HloModuleProto, ingest/hlo_writer.h).
// Fields are written in the order the writer adds them; protobuf readers accept any order, and
// concatenating two encoded messages merges them, which the writers use to add fields late.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/proto_wire.h"

namespace kiln::ingest::proto_wire {

class Encoder {
 public:
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }
  bool empty() const { return out_.empty(); }

  Encoder& Varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  Encoder& Tag(uint32_t field, WireType type) {
    return Varint(uint64_t{field} << 3 | static_cast<uint64_t>(type));
  }
  // An int32/int64/enum/bool field (negative values sign-extended to ten bytes, as protobuf does).
  Encoder& Int(uint32_t field, int64_t v) {
    return Tag(field, kVarint).Varint(static_cast<uint64_t>(v));
  }
  Encoder& Bool(uint32_t field, bool v) { return Int(field, v ? 1 : 0); }
  Encoder& Str(uint32_t field, std::string_view s) {
    Tag(field, kLengthDelimited).Varint(s.size());
    out_.append(s);
    return *this;
  }
  Encoder& Bytes(uint32_t field, std::span<const uint8_t> b) {
    return Str(field, std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  }
  Encoder& Message(uint32_t field, const Encoder& m) { return Str(field, m.bytes()); }
  Encoder& Fixed32(uint32_t field, uint32_t v) {
    Tag(field, kFixed32);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  // A repeated integer field, packed (left out when empty, as protobuf writes it).
  Encoder& PackedInts(uint32_t field, const std::vector<int64_t>& values) {
    if (values.empty()) return *this;
    Encoder packed;
    for (int64_t v : values) packed.Varint(static_cast<uint64_t>(v));
    return Message(field, packed);
  }
  // Appends another encoder's fields to this message.
  Encoder& Append(const Encoder& other) {
    out_ += other.out_;
    return *this;
  }

 private:
  std::string out_;
};

}  // namespace kiln::ingest::proto_wire
