// The dtype table (ir/dtype_table.h) and the dispatcher generated from it (ir/dtype_dispatch.h):
// properties of known types, the named sets pinned to their members, and VisitDType calling the
// right storage type for every dtype and `otherwise` for every other value.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/dtype_dispatch.h"
#include "kernels/dispatch.h"

namespace kiln::ir {
namespace {

TEST(DTypeTable, PropertiesOfKnownTypes) {
  EXPECT_EQ(DTypeName(DType::kF32), "f32");
  EXPECT_EQ(DTypeName(DType::kC64), "complex<f32>");
  EXPECT_EQ(DTypeName(DType::kPred), "i1");
  EXPECT_EQ(DTypeByteSize(DType::kC128), 16);
  EXPECT_EQ(DTypeByteSize(DType::kS4), 1);
  EXPECT_EQ(DTypeBits(DType::kS4), 4);
  EXPECT_EQ(DTypeBits(DType::kPred), 8);
  EXPECT_EQ(DTypeBits(DType::kF6E2M3FN), 6);
  EXPECT_TRUE(IsSubByte(DType::kU1) && IsSubByte(DType::kF4E2M1FN));
  EXPECT_FALSE(IsSubByte(DType::kPred) || IsSubByte(DType::kInvalid));
  EXPECT_TRUE(IsNarrowFloat(DType::kF8E4M3FN) && IsFloat(DType::kF8E4M3FN));
  EXPECT_TRUE(IsFloat(DType::kF6E3M2FN) && !IsNarrowFloat(DType::kF6E3M2FN));
  EXPECT_TRUE(IsSignedInt(DType::kS2) && IsUnsignedInt(DType::kU64) && IsComplex(DType::kC64));
  EXPECT_FALSE(IsInteger(DType::kPred) || IsFloat(DType::kC64) || IsInteger(DType::kToken));
  const struct {
    DType t;
    int exp, man;
  } formats[] = {{DType::kF16, 5, 10},     {DType::kBF16, 8, 7},   {DType::kF32, 8, 23},
                 {DType::kF64, 11, 52},    {DType::kF8E5M2, 5, 2}, {DType::kF8E8M0FNU, 8, 0},
                 {DType::kF4E2M1FN, 2, 1}, {DType::kS32, 0, 0},    {DType::kC64, 0, 0}};
  for (const auto& f : formats) {
    EXPECT_EQ(FloatExponentBits(f.t), f.exp) << DTypeName(f.t);
    EXPECT_EQ(FloatMantissaBits(f.t), f.man) << DTypeName(f.t);
  }
  // Values outside the table read as kInvalid.
  EXPECT_EQ(DTypeByteSize(static_cast<DType>(200)), 0);
  EXPECT_EQ(DTypeName(static_cast<DType>(200)), "invalid");
}

TEST(DTypeTable, NamedSets) {
  using D = DType;
  EXPECT_EQ(kPredicates, SetOf(D::kPred));
  EXPECT_EQ(kIntegers, SetOf(D::kS8, D::kS16, D::kS32, D::kS64, D::kU8, D::kU16, D::kU32, D::kU64));
  EXPECT_EQ(kSignedIntegers | kUnsignedIntegers, kIntegers);
  EXPECT_EQ(kSignedIntegers & kUnsignedIntegers, 0u);
  EXPECT_EQ(kHalfFloats, SetOf(D::kF16, D::kBF16));
  EXPECT_EQ(kNativeFloats, SetOf(D::kF32, D::kF64));
  EXPECT_EQ(kComplexes, SetOf(D::kC64, D::kC128));
  EXPECT_EQ(kReals, kNativeFloats | kIntegers);
  EXPECT_EQ(kNumbers, kReals | kComplexes);
  EXPECT_EQ(kBlasTypes, SetOf(D::kF32, D::kF64, D::kC64, D::kC128));
  EXPECT_EQ(kStored, kPredicates | kIntegers | kHalfFloats | kNativeFloats | kComplexes);
  EXPECT_TRUE(InSet(D::kU16, kReals));
  EXPECT_FALSE(InSet(D::kS4, kIntegers) || InSet(D::kF16, kReals));
}

// What VisitDType<kStored> reports for `t`: the storage's size and DType, or -1 from otherwise.
struct Seen {
  int bytes;
  DType of;
};
Seen VisitStored(DType t) {
  return VisitDType<kStored>(
      t,
      [](auto tag) {
        using T = TagType<decltype(tag)>;
        return Seen{static_cast<int>(sizeof(T)), DTypeOf<T>()};
      },
      [] {
        return Seen{-1, DType::kInvalid};
      });
}

TEST(DTypeTable, VisitEveryValue) {
  int stored = 0;
  for (int v = 0; v <= 255; ++v) {
    const auto t = static_cast<DType>(v);
    const Seen seen = VisitStored(t);
    if (v <= kMaxDType && InSet(t, kStored)) {
      ++stored;
      EXPECT_EQ(seen.bytes, DTypeByteSize(t)) << DTypeName(t);
      EXPECT_EQ(seen.of, t) << DTypeName(t);
    } else {
      EXPECT_EQ(seen.bytes, -1) << v;
    }
  }
  EXPECT_EQ(stored, 15);
  static_assert(std::is_same_v<Storage<DType::kPred>, PredByte>);
  static_assert(std::is_same_v<Storage<DType::kC128>, std::complex<double>>);
  static_assert(std::is_same_v<Storage<DType::kS4>, void>);
  static_assert(DTypeOf<bool>() == DType::kInvalid && DTypeOf<void>() == DType::kInvalid);
}

TEST(DTypeTable, VisitOnlyTheSet) {
  // A stored type outside the set goes to otherwise; the result converts to the first member's.
  int calls = 0;
  auto size_in = [&](DType t) {
    return VisitDType<kIntegers | kPredicates>(
        t,
        [&](auto tag) -> int64_t {
          ++calls;
          return sizeof(TagType<decltype(tag)>);
        },
        [] { return 0; });
  };
  EXPECT_EQ(size_in(DType::kU32), 4);
  EXPECT_EQ(size_in(DType::kPred), 1);
  EXPECT_EQ(size_in(DType::kF32), 0);
  EXPECT_EQ(size_in(DType::kS4), 0);
  EXPECT_EQ(calls, 2);
}

TEST(DTypeTable, KernelsDispatchNamesTheOp) {
  auto width = [](DType t) {
    return kernels::Dispatch<kBlasTypes>(
        "my.op", t, []<typename T>() -> StatusOr<int> { return static_cast<int>(sizeof(T)); });
  };
  EXPECT_EQ(*width(DType::kC128), 16);
  const StatusOr<int> bad = width(DType::kS32);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "my.op does not support element type i32");
}

}  // namespace
}  // namespace kiln::ir
