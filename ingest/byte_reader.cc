#include "ingest/byte_reader.h"

#include <bit>
#include <cstring>

namespace kiln::ingest {
namespace {

// MLIR pads aligned sections and blobs with this byte.
constexpr uint8_t kAlignmentByte = 0xCB;
// MLIR's section ids stop at 8 (Properties); anything larger is corruption.
constexpr uint8_t kNumSectionIds = 9;
// Alignments are small powers of two in practice; a huge one would only skip the whole file.
constexpr uint64_t kMaxAlignment = uint64_t{1} << 16;

}  // namespace

std::string HexOffset(size_t offset) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string digits;
  do {
    digits.insert(digits.begin(), kDigits[offset & 0xF]);
    offset >>= 4;
  } while (offset != 0);
  return "0x" + digits;
}

Status ByteReader::Error(std::string_view message) const {
  return DataLoss("at file offset " + HexOffset(offset()) + ": " + std::string(message));
}

StatusOr<uint8_t> ByteReader::ReadByte() {
  if (empty()) return Error("unexpected end of data (needed 1 byte)");
  return data_[pos_++];
}

StatusOr<std::span<const uint8_t>> ByteReader::ReadBytes(uint64_t count) {
  if (count > remaining()) {
    return Error("needed " + std::to_string(count) + " bytes, " + std::to_string(remaining()) +
                 " remain");
  }
  std::span<const uint8_t> out = data_.subspan(pos_, static_cast<size_t>(count));
  pos_ += static_cast<size_t>(count);
  return out;
}

Status ByteReader::Skip(uint64_t count) {
  KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> skipped, ReadBytes(count));
  (void)skipped;
  return Status::Ok();
}

StatusOr<uint64_t> ByteReader::ReadVarInt() {
  const size_t start = pos_;
  KILN_ASSIGN_OR_RETURN(uint8_t first, ReadByte());
  if (first & 1) return uint64_t{first} >> 1;  // the common one-byte case
  if (first == 0) {
    // Marker byte 0: a raw little-endian 64-bit value follows.
    if (remaining() < 8) {
      pos_ = start;
      return Error("truncated 9-byte varint (" + std::to_string(remaining()) +
                   " of 8 bytes remain)");
    }
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = (value << 8) | data_[pos_ + static_cast<size_t>(i)];
    pos_ += 8;
    return value;
  }
  const int extra = std::countr_zero(first);  // 1..7 additional bytes
  if (remaining() < static_cast<size_t>(extra)) {
    pos_ = start;
    return Error("truncated varint (needs " + std::to_string(extra) + " more bytes, " +
                 std::to_string(remaining()) + " remain)");
  }
  uint64_t word = first;
  for (int i = 0; i < extra; ++i) {
    word |= uint64_t{data_[pos_ + static_cast<size_t>(i)]} << (8 * (i + 1));
  }
  pos_ += static_cast<size_t>(extra);
  return word >> (extra + 1);
}

StatusOr<int64_t> ByteReader::ReadSignedVarInt() {
  KILN_ASSIGN_OR_RETURN(uint64_t zigzag, ReadVarInt());
  return static_cast<int64_t>((zigzag >> 1) ^ (~(zigzag & 1) + 1));
}

StatusOr<FlaggedVarInt> ByteReader::ReadVarIntWithFlag() {
  KILN_ASSIGN_OR_RETURN(uint64_t raw, ReadVarInt());
  return FlaggedVarInt{raw >> 1, (raw & 1) != 0};
}

StatusOr<uint64_t> ByteReader::ReadCount(std::string_view what, uint64_t min_item_bytes) {
  KILN_ASSIGN_OR_RETURN(uint64_t count, ReadVarInt());
  if (min_item_bytes != 0 && count > remaining() / min_item_bytes) {
    return Error(std::string(what) + " count " + std::to_string(count) + " cannot fit in the " +
                 std::to_string(remaining()) + " bytes that remain");
  }
  return count;
}

StatusOr<std::string_view> ByteReader::ReadNulTerminatedString() {
  const uint8_t* begin = data_.data() + pos_;
  const void* nul = std::memchr(begin, 0, remaining());
  if (nul == nullptr) return Error("string is missing its NUL terminator");
  const size_t length = static_cast<size_t>(static_cast<const uint8_t*>(nul) - begin);
  std::string_view out(reinterpret_cast<const char*>(begin), length);
  pos_ += length + 1;
  return out;
}

StatusOr<std::span<const uint8_t>> ByteReader::ReadBlob() {
  KILN_ASSIGN_OR_RETURN(uint64_t size, ReadVarInt());
  if (size > remaining()) {
    return Error("blob of " + std::to_string(size) + " bytes, but only " +
                 std::to_string(remaining()) + " remain");
  }
  return ReadBytes(size);
}

Status ByteReader::AlignTo(uint64_t alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment) {
    return Error("invalid alignment " + std::to_string(alignment));
  }
  while (offset() % alignment != 0) {
    KILN_ASSIGN_OR_RETURN(uint8_t pad, ReadByte());
    if (pad != kAlignmentByte) {
      return Error("expected alignment padding byte 0xCB, found " + HexOffset(pad));
    }
  }
  return Status::Ok();
}

StatusOr<Section> ByteReader::ReadSection() {
  KILN_ASSIGN_OR_RETURN(uint8_t id_and_align, ReadByte());
  KILN_ASSIGN_OR_RETURN(uint64_t length, ReadVarInt());
  Section section;
  section.id = id_and_align & 0x7F;
  if (section.id >= kNumSectionIds) {
    return Error("invalid section id " + std::to_string(section.id));
  }
  if (id_and_align & 0x80) {
    KILN_ASSIGN_OR_RETURN(uint64_t alignment, ReadVarInt());
    KILN_RETURN_IF_ERROR(AlignTo(alignment));
  }
  if (length > remaining()) {
    return Error("section " + std::to_string(section.id) + " claims " + std::to_string(length) +
                 " bytes, but only " + std::to_string(remaining()) + " remain");
  }
  section.offset = offset();
  KILN_ASSIGN_OR_RETURN(section.data, ReadBytes(length));
  return section;
}

}  // namespace kiln::ingest
