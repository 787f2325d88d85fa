#include "ir/dtype.h"

namespace kiln::ir {

int DTypeBits(DType t) {
  switch (t) {
    case DType::kS1:
    case DType::kU1:
      return 1;
    case DType::kS2:
    case DType::kU2:
      return 2;
    case DType::kS4:
    case DType::kU4:
    case DType::kF4E2M1FN:
      return 4;
    case DType::kF6E2M3FN:
    case DType::kF6E3M2FN:
      return 6;
    default:
      return 8 * DTypeByteSize(t);
  }
}

int DTypeByteSize(DType t) {
  switch (t) {
    case DType::kPred:
    case DType::kS8:
    case DType::kU8:
    case DType::kS4:
    case DType::kU4:
    case DType::kS2:
    case DType::kU2:
    case DType::kS1:
    case DType::kU1:
    case DType::kF8E5M2:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3:
    case DType::kF8E3M4:
    case DType::kF8E8M0FNU:
    case DType::kF4E2M1FN:
    case DType::kF6E2M3FN:
    case DType::kF6E3M2FN:
      return 1;
    case DType::kS16:
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kS32:
    case DType::kU32:
    case DType::kF32:
      return 4;
    case DType::kS64:
    case DType::kU64:
    case DType::kF64:
    case DType::kC64:
      return 8;
    case DType::kC128:
      return 16;
    case DType::kToken:
    case DType::kInvalid:
      return 0;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kInvalid:
      return "invalid";
    case DType::kPred:
      return "i1";
    case DType::kS8:
      return "i8";
    case DType::kS16:
      return "i16";
    case DType::kS32:
      return "i32";
    case DType::kS64:
      return "i64";
    case DType::kU8:
      return "ui8";
    case DType::kU16:
      return "ui16";
    case DType::kU32:
      return "ui32";
    case DType::kU64:
      return "ui64";
    case DType::kF16:
      return "f16";
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kBF16:
      return "bf16";
    case DType::kC64:
      return "complex<f32>";
    case DType::kC128:
      return "complex<f64>";
    case DType::kF8E5M2:
      return "f8E5M2";
    case DType::kF8E4M3FN:
      return "f8E4M3FN";
    case DType::kF8E4M3B11FNUZ:
      return "f8E4M3B11FNUZ";
    case DType::kF8E5M2FNUZ:
      return "f8E5M2FNUZ";
    case DType::kF8E4M3FNUZ:
      return "f8E4M3FNUZ";
    case DType::kS4:
      return "i4";
    case DType::kU4:
      return "ui4";
    case DType::kToken:
      return "token";
    case DType::kS2:
      return "i2";
    case DType::kU2:
      return "ui2";
    case DType::kF8E4M3:
      return "f8E4M3";
    case DType::kF8E3M4:
      return "f8E3M4";
    case DType::kF8E8M0FNU:
      return "f8E8M0FNU";
    case DType::kF4E2M1FN:
      return "f4E2M1FN";
    case DType::kS1:
      return "i1s";
    case DType::kU1:
      return "ui1";
    case DType::kF6E2M3FN:
      return "f6E2M3FN";
    case DType::kF6E3M2FN:
      return "f6E3M2FN";
  }
  return "invalid";
}

std::optional<DType> DTypeFromPjrt(int pjrt_type) {
  if (pjrt_type <= 0 || pjrt_type > kMaxDType) return std::nullopt;
  return static_cast<DType>(pjrt_type);
}

bool IsNarrowFloat(DType t) {
  switch (t) {
    case DType::kF8E5M2:
    case DType::kF8E4M3FN:
    case DType::kF8E4M3B11FNUZ:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E4M3:
    case DType::kF8E3M4:
    case DType::kF8E8M0FNU:
    case DType::kF4E2M1FN:
      return true;
    default:
      return false;
  }
}

bool IsFloat(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kF32:
    case DType::kF64:
    case DType::kBF16:
    case DType::kF6E2M3FN:
    case DType::kF6E3M2FN:
      return true;
    default:
      return IsNarrowFloat(t);
  }
}

bool IsComplex(DType t) { return t == DType::kC64 || t == DType::kC128; }

bool IsSignedInt(DType t) {
  switch (t) {
    case DType::kS1:
    case DType::kS2:
    case DType::kS4:
    case DType::kS8:
    case DType::kS16:
    case DType::kS32:
    case DType::kS64:
      return true;
    default:
      return false;
  }
}

bool IsUnsignedInt(DType t) {
  switch (t) {
    case DType::kU1:
    case DType::kU2:
    case DType::kU4:
    case DType::kU8:
    case DType::kU16:
    case DType::kU32:
    case DType::kU64:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::ir
