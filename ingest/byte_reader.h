// ByteReader: the bounds-checked cursor every part of the bytecode reader decodes through. It knows
// MLIR bytecode's primitive encodings (PrefixVarInt, zigzag, flagged varints, NUL-terminated
// strings, size-prefixed blobs, sections with 0xCB alignment padding) and nothing about what they
// mean.
//
// Every read either succeeds or returns a DATA_LOSS status naming the file offset; nothing ever
// reads past the end of its range. Counts read from the file are checked against the bytes that
// remain (ReadCount) before a caller allocates anything for them, so corrupt input cannot request
// huge allocations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "support/status.h"

namespace kiln::ingest {

// One `(value << 1) | flag` varint, split.
struct FlaggedVarInt {
  uint64_t value = 0;
  bool flag = false;
};

// A section: `byte idAndAlign, varint length, [varint alignment, 0xCB padding], data`.
struct Section {
  uint8_t id = 0;
  std::span<const uint8_t> data;
  size_t offset = 0;  // absolute file offset of data[0]
};

class ByteReader {
 public:
  ByteReader() = default;
  // `base` is the absolute file offset of data[0]: error messages report file offsets, and section
  // alignment is computed relative to the start of the file (where MLIR's writer computed it).
  explicit ByteReader(std::span<const uint8_t> data, size_t base = 0) : data_(data), base_(base) {}
  explicit ByteReader(const Section& section) : ByteReader(section.data, section.offset) {}

  size_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return pos_ == data_.size(); }
  size_t offset() const { return base_ + pos_; }  // absolute file offset of the cursor

  StatusOr<uint8_t> ReadByte();
  StatusOr<std::span<const uint8_t>> ReadBytes(uint64_t count);
  Status Skip(uint64_t count);

  // MLIR's PrefixVarInt: the trailing zero bits of the first byte count the extra bytes (0x00 means
  // a raw 8-byte value follows); the remaining bits are the little-endian value.
  StatusOr<uint64_t> ReadVarInt();
  // Zigzag-encoded signed varint.
  StatusOr<int64_t> ReadSignedVarInt();
  StatusOr<FlaggedVarInt> ReadVarIntWithFlag();

  // Reads a varint element count for a list whose items take at least `min_item_bytes` bytes each
  // in this reader, and fails (naming `what`) if the remaining bytes cannot possibly hold that
  // many. Use it before reserving or resizing anything by a count taken from the file.
  StatusOr<uint64_t> ReadCount(std::string_view what, uint64_t min_item_bytes = 1);

  // A string terminated by NUL (the NUL is consumed, not returned).
  StatusOr<std::string_view> ReadNulTerminatedString();
  // `varint size` followed by that many bytes.
  StatusOr<std::span<const uint8_t>> ReadBlob();
  // Skips 0xCB padding bytes up to the next multiple of `alignment` (a power of two) in file
  // offsets.
  Status AlignTo(uint64_t alignment);
  StatusOr<Section> ReadSection();

  // A DATA_LOSS status that names the current file offset.
  Status Error(std::string_view message) const;

 private:
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  size_t base_ = 0;
};

// "0x1a2f": file offsets in error messages.
std::string HexOffset(size_t offset);

}  // namespace kiln::ingest
