// ByteReader: MLIR bytecode's primitive encodings and their bounds checks.
#include "ingest/byte_reader.h"

#include <gtest/gtest.h>

#include <vector>

namespace kiln::ingest {
namespace {

TEST(ByteReader, PrefixVarInts) {
  // 1 byte (marker bit 0), 2 bytes (marker 0b10), 3 bytes, and the 0x00-marked raw 8-byte form.
  const std::vector<uint8_t> bytes = {0x0D,              // 6
                                      0x02, 0x01,        // 64
                                      0x04, 0x00, 0x01,  // 1 << 13
                                      0x00, 0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01,
                                      0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02};  // 8 bytes
  ByteReader r(bytes);
  EXPECT_EQ(*r.ReadVarInt(), 6u);
  EXPECT_EQ(*r.ReadVarInt(), 64u);
  EXPECT_EQ(*r.ReadVarInt(), uint64_t{1} << 13);
  EXPECT_EQ(*r.ReadVarInt(), 0x0123456789ABCDEFu);
  EXPECT_EQ(*r.ReadVarInt(), uint64_t{1} << 49);
  EXPECT_TRUE(r.empty());
}

TEST(ByteReader, SignedAndFlaggedVarInts) {
  const std::vector<uint8_t> bytes = {0x01, 0x03, 0x05, 0x07, 0x0B};
  ByteReader r(bytes);
  EXPECT_EQ(*r.ReadSignedVarInt(), 0);                       // zigzag 0
  EXPECT_EQ(*r.ReadSignedVarInt(), -1);                      // zigzag 1
  EXPECT_EQ(*r.ReadSignedVarInt(), 1);                       // zigzag 2
  EXPECT_EQ(*r.ReadSignedVarInt(), -2);                      // zigzag 3
  StatusOr<FlaggedVarInt> flagged = r.ReadVarIntWithFlag();  // 5 = (2 << 1) | 1
  ASSERT_TRUE(flagged.ok());
  EXPECT_EQ(flagged->value, 2u);
  EXPECT_TRUE(flagged->flag);
}

TEST(ByteReader, MostNegativeSignedVarInt) {
  // MLIR writes kDynamic (INT64_MIN) as zigzag 0xFFFF...FF via the 9-byte form.
  const std::vector<uint8_t> bytes = {0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  ByteReader r(bytes);
  EXPECT_EQ(*r.ReadSignedVarInt(), INT64_MIN);
}

TEST(ByteReader, TruncationIsAnErrorWithTheOffset) {
  const std::vector<uint8_t> bytes = {0x00, 0x01, 0x02};
  ByteReader r(bytes, /*base=*/0x100);
  StatusOr<uint64_t> v = r.ReadVarInt();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(v.status().message().find("0x100"), std::string::npos) << v.status().message();

  const std::vector<uint8_t> two = {0x04, 0x00};  // 3-byte varint with one extra byte present
  ByteReader r2(two);
  EXPECT_FALSE(r2.ReadVarInt().ok());
  ByteReader empty(std::span<const uint8_t>{});
  EXPECT_FALSE(empty.ReadByte().ok());
}

TEST(ByteReader, CountsAreCheckedAgainstRemainingBytes) {
  const std::vector<uint8_t> bytes = {0x07, 0xAA, 0xBB, 0xCC};  // count 3, three bytes follow
  ByteReader ok(bytes);
  EXPECT_EQ(*ok.ReadCount("item"), 3u);
  ByteReader too_many(bytes);
  StatusOr<uint64_t> count = too_many.ReadCount("item", 2);  // 3 items x 2 bytes > 3 bytes
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("item count 3"), std::string::npos);
  const std::vector<uint8_t> huge = {0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
  ByteReader h(huge);
  EXPECT_FALSE(h.ReadCount("item").ok());
}

TEST(ByteReader, StringsAndBlobs) {
  const std::vector<uint8_t> bytes = {'h', 'i', 0, 0x07, 'x', 'y', 'z', 0x09, 'q'};
  ByteReader r(bytes);
  EXPECT_EQ(*r.ReadNulTerminatedString(), "hi");
  StatusOr<std::span<const uint8_t>> blob = r.ReadBlob();
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(blob->size(), 3u);
  EXPECT_FALSE(r.ReadBlob().ok());  // claims 4 bytes, 1 remains
  const std::vector<uint8_t> no_nul = {'a', 'b'};
  ByteReader r2(no_nul);
  EXPECT_FALSE(r2.ReadNulTerminatedString().ok());
}

TEST(ByteReader, AlignedSectionSkipsPadding) {
  // At file offset 3: section 4 with the alignment flag, length 2, alignment 8 (varint 0x11), then
  // 0xCB padding up to file offset 8, then the data.
  std::vector<uint8_t> file = {0xAA, 0xBB, 0xCC};
  file.insert(file.end(), {0x84, 0x05, 0x11});
  while (file.size() % 8 != 0) file.push_back(0xCB);
  file.insert(file.end(), {1, 2});
  ByteReader fr(file);
  ASSERT_TRUE(fr.Skip(3).ok());
  StatusOr<Section> section = fr.ReadSection();
  ASSERT_TRUE(section.ok()) << section.status().ToString();
  EXPECT_EQ(section->id, 4);
  EXPECT_EQ(section->offset, 8u);
  EXPECT_EQ(section->data.size(), 2u);
  EXPECT_EQ(section->data[0], 1);

  file[7] = 0x00;  // corrupt a padding byte
  ByteReader bad(file);
  ASSERT_TRUE(bad.Skip(3).ok());
  EXPECT_FALSE(bad.ReadSection().ok());
}

TEST(ByteReader, InvalidSectionsAreErrors) {
  const std::vector<uint8_t> bad_id = {0x09, 0x01, 0x00};
  EXPECT_FALSE(ByteReader(bad_id).ReadSection().ok());
  const std::vector<uint8_t> too_long = {0x04, 0x09, 0x00};  // 4 bytes claimed, 1 present
  EXPECT_FALSE(ByteReader(too_long).ReadSection().ok());
  const std::vector<uint8_t> bad_alignment = {0x84, 0x01, 0x07, 0x00};  // alignment 3
  EXPECT_FALSE(ByteReader(bad_alignment).ReadSection().ok());
}

}  // namespace
}  // namespace kiln::ingest
