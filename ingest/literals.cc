// Numeric payloads: MLIR's APInt/APFloat scalar encodings and dense tensor literals.
//
// Dense literals arrive as MLIR's raw storage: little-endian, sub-byte element types widened to one
// byte, complex numbers as (real, imaginary) pairs, and a splat stored as its single element. i1
// tensors are special: MLIR's builtin encoding and VHLO's both pack bits, with different rules for
// telling packed data from a splat. The IR always receives the fully expanded form (one byte 0/1
// per boolean), within the decoder's size limits.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "ingest/attr_type_decoder.h"
#include "ir/dtype_dispatch.h"

namespace kiln::ingest {
namespace {

// Reads an APInt of `bits` bits: one raw byte up to 8 bits, a zigzag varint up to 64 bits. Wider
// values (`varint numWords` + words) are consumed and reported as not representable.
StatusOr<uint64_t> ReadAPIntBits(ByteReader& r, int bits, bool& too_wide) {
  too_wide = false;
  if (bits <= 8) {
    KILN_ASSIGN_OR_RETURN(uint8_t byte, r.ReadByte());
    return uint64_t{byte};
  }
  if (bits <= 64) {
    KILN_ASSIGN_OR_RETURN(int64_t value, r.ReadSignedVarInt());
    return static_cast<uint64_t>(value);
  }
  KILN_ASSIGN_OR_RETURN(uint64_t words, r.ReadCount("APInt word"));
  for (uint64_t i = 0; i < words; ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t word, r.ReadSignedVarInt());
    (void)word;
  }
  too_wide = true;
  return uint64_t{0};
}

// Truncates to `bits` and sign- or zero-extends back to 64 bits.
uint64_t ExtendFromWidth(uint64_t raw, int bits, bool is_signed) {
  if (bits >= 64 || bits <= 0) return raw;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  raw &= mask;
  if (is_signed && ((raw >> (bits - 1)) & 1)) raw |= ~mask;
  return raw;
}

double HalfToDouble(uint16_t bits) {
  const int sign = bits >> 15;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  double value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), -24);
  } else if (exponent == 0x1F) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else {
    value = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -value : value;
}

// Repeats the first `element` bytes of `out` until it is full.
void FillSplat(std::vector<uint8_t>& out, size_t element) {
  for (size_t filled = element; filled < out.size();) {
    const size_t chunk = std::min(filled, out.size() - filled);
    std::memcpy(out.data() + filled, out.data(), chunk);
    filled += chunk;
  }
}

}  // namespace

StatusOr<ir::Attr> AttrTypeDecoder::ReadIntegerPayload(ByteReader& r, const DecodedType& type) {
  if (!type.is_element() || type.bit_width <= 0 || ir::IsFloat(type.dtype()) ||
      ir::IsComplex(type.dtype())) {
    return r.Error("integer attribute has non-integer type " +
                   (type.is_element() ? type.spelling : type.type.ToString()));
  }
  bool too_wide = false;
  KILN_ASSIGN_OR_RETURN(uint64_t raw, ReadAPIntBits(r, type.bit_width, too_wide));
  if (too_wide) return ir::Attr::Opaque("integer constant of type " + type.spelling);
  const uint64_t value = ExtendFromWidth(raw, type.bit_width, type.is_signed);
  if (type.dtype() == ir::DType::kPred) return ir::Attr::Bool((value & 1) != 0);
  // Index has no DType; as an attribute value it behaves as the 64-bit integer it is stored as.
  ir::Type attr_type =
      type.dtype() == ir::DType::kInvalid ? ir::Type::Tensor(ir::DType::kS64, {}) : type.type;
  return ir::Attr::Int(static_cast<int64_t>(value), std::move(attr_type));
}

StatusOr<ir::Attr> AttrTypeDecoder::ReadFloatPayload(ByteReader& r, const DecodedType& type) {
  const bool known_float = ir::IsFloat(type.dtype()) || type.spelling == "tf32" ||
                           type.spelling == "f80" || type.spelling == "f128";
  if (!type.is_element() || !known_float || type.bit_width <= 0) {
    return r.Error("float attribute has non-float type " +
                   (type.is_element() ? type.spelling : type.type.ToString()));
  }
  bool too_wide = false;
  KILN_ASSIGN_OR_RETURN(uint64_t raw, ReadAPIntBits(r, type.bit_width, too_wide));
  raw = ExtendFromWidth(raw, type.bit_width, /*is_signed=*/false);
  return ir::VisitDType<ir::kNativeFloats | ir::kHalfFloats>(
      type.dtype(),
      [&](auto tag) -> StatusOr<ir::Attr> {
        using T = ir::TagType<decltype(tag)>;
        double value;
        if constexpr (std::is_same_v<T, double>) {
          value = std::bit_cast<double>(raw);
        } else if constexpr (std::is_same_v<T, float>) {
          value = std::bit_cast<float>(static_cast<uint32_t>(raw));
        } else if constexpr (std::is_same_v<T, ir::f16_t>) {
          value = HalfToDouble(static_cast<uint16_t>(raw));
        } else {  // bf16: the top half of a float
          value = std::bit_cast<float>(static_cast<uint32_t>(raw << 16));
        }
        return ir::Attr::Float(value, type.type);
      },
      [&]() -> StatusOr<ir::Attr> {
        // Narrow and exotic float scalars never occur as VHLO attribute values in practice.
        return ir::Attr::Opaque("float constant of type " + type.spelling);
      });
}

StatusOr<ir::Attr> AttrTypeDecoder::MakeDenseLiteral(const DecodedType& type,
                                                     std::span<const uint8_t> blob,
                                                     bool vhlo_bool_packing) {
  const ir::Type& tensor = type.type;
  if (type.kind != DecodedType::Kind::kValue || !tensor.is_tensor() ||
      tensor.dtype == ir::DType::kInvalid || tensor.dtype == ir::DType::kToken) {
    // Quantized or otherwise unmodelled element types: keep a description only.
    return ir::Attr::Opaque("dense literal of type " + tensor.ToString());
  }
  if (!tensor.has_static_shape()) {
    return DataLoss("dense literal has a dynamic type " + tensor.ToString());
  }
  const int64_t count = tensor.num_elements();
  const uint64_t element_bytes = static_cast<uint64_t>(ir::DTypeByteSize(tensor.dtype));
  if (count < 0 || static_cast<uint64_t>(count) > limits_.max_literal_bytes / element_bytes) {
    return ResourceExhausted("dense literal of type " + tensor.ToString() + " would exceed " +
                             std::to_string(limits_.max_literal_bytes) + " bytes once expanded");
  }
  const size_t n = static_cast<size_t>(count);
  const size_t total = n * static_cast<size_t>(element_bytes);
  KILN_RETURN_IF_ERROR(CheckBudget(total));

  ir::Attr literal;
  literal.kind = ir::Attr::Kind::kElements;
  literal.type = tensor;

  if (tensor.dtype == ir::DType::kPred) {
    const size_t packed_bytes = (n + 7) / 8;
    std::vector<uint8_t>& out = literal.data;
    if (vhlo_bool_packing && blob.size() == 1 && blob[0] == 0xFF) {
      out.assign(n, 1);  // VHLO's unambiguous "all true" splat
    } else if (blob.size() == packed_bytes && blob.size() != n &&
               (vhlo_bool_packing || blob.size() != 1)) {
      out.resize(n);
      for (size_t i = 0; i < n; ++i) out[i] = (blob[i / 8] >> (i % 8)) & 1;
    } else if (blob.size() == n) {
      out.resize(n);
      for (size_t i = 0; i < n; ++i) out[i] = blob[i] != 0;
    } else if (blob.size() == 1) {
      out.assign(n, blob[0] != 0 ? 1 : 0);
    } else {
      return DataLoss("i1 literal of type " + tensor.ToString() + " has " +
                      std::to_string(blob.size()) + " bytes; expected " + std::to_string(n) +
                      " (one per element), " + std::to_string(packed_bytes) +
                      " (bit-packed) or 1 (splat)");
    }
    return literal;
  }

  if (blob.size() == total) {
    literal.data.assign(blob.begin(), blob.end());
  } else if (blob.size() == element_bytes) {
    // A splat: one element repeated. MLIR writes zero-element constants (tensor<0x3xf32>) this way
    // too, with one element that no position uses.
    literal.data.resize(total);
    if (n > 0) {
      std::memcpy(literal.data.data(), blob.data(), blob.size());
      FillSplat(literal.data, blob.size());
    }
  } else {
    return DataLoss("dense literal of type " + tensor.ToString() + " needs " +
                    std::to_string(total) + " bytes (or one " + std::to_string(element_bytes) +
                    "-byte splat element), but its blob has " + std::to_string(blob.size()));
  }
  return literal;
}

}  // namespace kiln::ingest
