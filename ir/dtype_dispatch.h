// The one dtype dispatcher, generated from the dtype table (ir/dtype_table.h): VisitDType turns a
// runtime DType into a call of a generic lambda with a tag carrying the element's C++ type, for
// the types of a named subset. Every dtype switch of Kiln is a use of it (kernels/dispatch.h wraps
// it for kernels, which name the op in their errors), so each list of types is written once, here.
//
//   ir::VisitDType<ir::kIntegers>(t, [&](auto tag) { using T = ir::TagType<decltype(tag)>; ... },
//                                 [&] { return /* t is not in the set */; });
#pragma once

#include <bit>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "ir/dtype.h"

namespace kiln::ir {

// ---- the element storage types of the table's ctype column ------------------------------------

// 16-bit floats, stored as their bits (conversions: kernels/float16.h).
struct f16_t {
  uint16_t bits;
};
struct bf16_t {
  uint16_t bits;
};
// i1: one byte, 0 or 1. A distinct type (rather than uint8_t) so pred and u8 get different
// semantics at compile time; any non-zero byte reads as true.
struct PredByte {
  uint8_t v;
};
static_assert(sizeof(f16_t) == 2 && sizeof(bf16_t) == 2 && sizeof(PredByte) == 1);

// Storage<DType::kF32> is float; void for the types no kernel holds as themselves.
template <DType>
struct StorageOf {
  using type = void;
};
#define KILN_DTYPE_STORAGE(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  template <>                                                                    \
  struct StorageOf<DType::k##name> {                                             \
    using type = ctype;                                                          \
  };
KILN_DTYPES(KILN_DTYPE_STORAGE)
#undef KILN_DTYPE_STORAGE
template <DType t>
using Storage = typename StorageOf<t>::type;

// The storage types occupy exactly the table's bytes.
#define KILN_DTYPE_SIZE_CHECK(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  static_assert(std::is_void_v<ctype> ||                                            \
                sizeof(std::conditional_t<std::is_void_v<ctype>, char, ctype>) == bytes);
KILN_DTYPES(KILN_DTYPE_SIZE_CHECK)
#undef KILN_DTYPE_SIZE_CHECK

// The DType whose storage type is T (kInvalid for any other T), at compile time.
template <typename T>
consteval DType DTypeOf() {
  DType found = DType::kInvalid;
#define KILN_DTYPE_OF(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man)       \
  if (found == DType::kInvalid && !std::is_void_v<T> && std::is_same_v<T, ctype>) \
    found = DType::k##name;
  KILN_DTYPES(KILN_DTYPE_OF)
#undef KILN_DTYPE_OF
  return found;
}

// ---- sets of dtypes ---------------------------------------------------------------------------

// One bit per DType value.
using DTypeSet = uint64_t;
static_assert(kMaxDType < 64, "DTypeSet holds one bit per dtype");

constexpr DTypeSet SetOf(DType t) { return DTypeSet{1} << static_cast<unsigned>(t); }
template <typename... Ts>
constexpr DTypeSet SetOf(DType t, Ts... more) {
  return (SetOf(t) | ... | SetOf(more));
}
constexpr bool InSet(DType t, DTypeSet set) { return (SetOf(t) & set) != 0; }

namespace dtype_internal {
// The types of one kind of the table that have a storage type.
constexpr DTypeSet StoredOfKind(DTypeKind k) {
  DTypeSet set = 0;
#define KILN_DTYPE_KIND(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  if (DTypeKind::kind == k && !std::is_void_v<ctype>) set |= SetOf(DType::k##name);
  KILN_DTYPES(KILN_DTYPE_KIND)
#undef KILN_DTYPE_KIND
  return set;
}
}  // namespace dtype_internal

// The named subsets. Each is a set of the table's rows; kernels state which types they accept by
// the set they dispatch over.
inline constexpr DTypeSet kPredicates = dtype_internal::StoredOfKind(DTypeKind::kPred);
inline constexpr DTypeSet kSignedIntegers = dtype_internal::StoredOfKind(DTypeKind::kSigned);
inline constexpr DTypeSet kUnsignedIntegers = dtype_internal::StoredOfKind(DTypeKind::kUnsigned);
inline constexpr DTypeSet kIntegers = kSignedIntegers | kUnsignedIntegers;  // s8..s64, u8..u64
inline constexpr DTypeSet kHalfFloats = SetOf(DType::kF16, DType::kBF16);   // computed in f32
inline constexpr DTypeSet kNativeFloats =  // f32, f64: what C++ computes in directly
    dtype_internal::StoredOfKind(DTypeKind::kFloat) & ~kHalfFloats;
inline constexpr DTypeSet kComplexes = dtype_internal::StoredOfKind(DTypeKind::kComplex);
inline constexpr DTypeSet kReals = kNativeFloats | kIntegers;       // arithmetic, compare, min/max
inline constexpr DTypeSet kNumbers = kReals | kComplexes;           // products: dot, convolution
inline constexpr DTypeSet kBlasTypes = kNativeFloats | kComplexes;  // BLAS and LAPACK
// Every type with a storage type: the types kernels compute as themselves.
inline constexpr DTypeSet kStored =
    kPredicates | kIntegers | kHalfFloats | kNativeFloats | kComplexes;
static_assert(kNativeFloats == SetOf(DType::kF32, DType::kF64));
static_assert(kStored == (kPredicates | kIntegers |
                          dtype_internal::StoredOfKind(DTypeKind::kFloat) | kComplexes),
              "a storage type in ir/dtype_table.h that no named set covers");

// ---- the dispatcher -----------------------------------------------------------------------------

template <typename T>
struct TypeTag {
  using type = T;
};
// The C++ type a tag carries: `using T = TagType<decltype(tag)>;`.
template <typename Tag>
using TagType = typename std::remove_cvref_t<Tag>::type;

// The first (lowest numbered) member of `set`.
template <DTypeSet set>
inline constexpr DType kFirstOf = static_cast<DType>(std::countr_zero(set));

// Calls fn(TypeTag<Storage<t>>{}) when t is in `set`, else otherwise(). fn is instantiated for the
// members of `set` only. The result has the type fn returns for the first member; the other calls'
// and otherwise()'s results convert to it.
template <DTypeSet set, typename Fn, typename Otherwise>
auto VisitDType(DType t, Fn&& fn, Otherwise&& otherwise) {
  static_assert(set != 0 && (set & ~kStored) == 0, "a dtype set may hold only stored types");
  using Result = std::invoke_result_t<Fn&, TypeTag<Storage<kFirstOf<set>>>>;
  switch (t) {
#define KILN_DTYPE_VISIT(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  case DType::k##name:                                                         \
    if constexpr (InSet(DType::k##name, set)) {                                \
      return static_cast<Result>(fn(TypeTag<ctype>{}));                        \
    }                                                                          \
    break;
    KILN_DTYPES(KILN_DTYPE_VISIT)
#undef KILN_DTYPE_VISIT
  }
  return static_cast<Result>(otherwise());
}

}  // namespace kiln::ir
