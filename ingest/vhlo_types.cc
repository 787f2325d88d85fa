// VHLO type encodings (stablehlo/dialect/VhloBytecode.cpp): `varint code` followed by a payload.
// Element types map onto ir::DType; tensors, tokens and tuples onto ir::Type. Types the IR does not
// model (quantized, unranked, buffers, futures, witness) become opaque with a faithful spelling, so
// the compiler can report them rather than the reader failing.
#include <string>

#include "ingest/attr_type_decoder.h"
#include "ingest/encoding_names.h"

namespace kiln::ingest {

StatusOr<DecodedType> AttrTypeDecoder::DecodeVhloType(ByteReader& r, uint64_t code) {
  using ir::DType;
  switch (code) {
    // clang-format off
    case 0: return ElementType(DType::kPred);
    case 2: return ElementType(DType::kBF16);
    case 3: return ElementType(DType::kF16);
    case 4: return ElementType(DType::kF32);
    case 5: return ElementType(DType::kF64);
    case 6: return ElementType(DType::kF8E4M3FN);
    case 7: return ElementType(DType::kF8E5M2);
    case 10: return ElementType(DType::kS4);
    case 11: return ElementType(DType::kS8);
    case 12: return ElementType(DType::kS16);
    case 13: return ElementType(DType::kS32);
    case 14: return ElementType(DType::kS64);
    case 15: return ElementType(DType::kU4);
    case 16: return ElementType(DType::kU8);
    case 17: return ElementType(DType::kU16);
    case 18: return ElementType(DType::kU32);
    case 19: return ElementType(DType::kU64);
    case 27: return ElementType(DType::kF8E4M3FNUZ);
    case 28: return ElementType(DType::kF8E5M2FNUZ);
    case 29: return ElementType(DType::kF8E4M3B11FNUZ);
    case 31: return ElementType(DType::kS2);
    case 32: return ElementType(DType::kU2);
    case 35: return ElementType(DType::kF8E4M3);
    case 36: return ElementType(DType::kF8E3M4);
    case 37: return ElementType(DType::kF4E2M1FN);
    case 38: return ElementType(DType::kF6E2M3FN);
    case 39: return ElementType(DType::kF6E3M2FN);
    case 40: return ElementType(DType::kF8E8M0FNU);
    case 9: return ElementType(DType::kS64);  // index: 64-bit in dense storage (layouts)
    case 34: return OpaqueElementType("tf32", 19);
      // clang-format on

    case 1: {  // complex(element)
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      if (element->dtype() == DType::kF32 && element->is_element()) {
        return ElementType(DType::kC64);
      }
      if (element->dtype() == DType::kF64 && element->is_element()) {
        return ElementType(DType::kC128);
      }
      return OpaqueElementType("complex<" + element->spelling + ">", 0);
    }
    case 8: {  // function(inputs, results)
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> inputs, ReadValueTypeList(r));
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> results, ReadValueTypeList(r));
      return FunctionType(std::move(inputs), std::move(results));
    }
    case 20:    // ranked_tensor(shape, element)
    case 21: {  // ranked_tensor_with_encoding(encoding, shape, element)
      if (code == 21) {
        // The encoding (bounds for dynamic dimensions, or a foreign layout) does not change what
        // Kiln computes; only its index is consumed, so a foreign encoding never needs decoding.
        KILN_ASSIGN_OR_RETURN(uint64_t encoding, r.ReadVarInt());
        (void)encoding;
      }
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadSignedList(r));
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      return MakeTensorType(std::move(dims), *element);
    }
    case 22: {
      DecodedType token;
      token.type = ir::Type::Token();
      return token;
    }
    case 23: {  // tuple(types)
      DecodedType tuple;
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> elements, ReadValueTypeList(r));
      tuple.type = ir::Type::Tuple(std::move(elements));
      return tuple;
    }
    case 24: {  // uniform_quantized: flags, storage, expressed, f64 scale, zero point, min, max
      KILN_ASSIGN_OR_RETURN(uint64_t flags, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(const DecodedType* storage, ReadType(r));
      KILN_ASSIGN_OR_RETURN(const DecodedType* expressed, ReadType(r));
      KILN_ASSIGN_OR_RETURN(int64_t scale_bits, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t zero_point, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t storage_min, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t storage_max, r.ReadSignedVarInt());
      (void)flags;
      (void)scale_bits;
      return OpaqueElementType("!quant.uniform<" + storage->spelling + "<" +
                                   std::to_string(storage_min) + ":" + std::to_string(storage_max) +
                                   ">:" + expressed->spelling + ", zero_point " +
                                   std::to_string(zero_point) + ">",
                               storage->bit_width);
    }
    case 30: {  // uniform_quantized_per_axis
      KILN_ASSIGN_OR_RETURN(uint64_t flags, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(const DecodedType* storage, ReadType(r));
      KILN_ASSIGN_OR_RETURN(const DecodedType* expressed, ReadType(r));
      KILN_ASSIGN_OR_RETURN(uint64_t axis, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t storage_min, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(int64_t storage_max, r.ReadSignedVarInt());
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> scale_bits, ReadSignedList(r));
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> zero_points, ReadSignedList(r));
      (void)flags;
      (void)storage_min;
      (void)storage_max;
      return OpaqueElementType("!quant.uniform<" + storage->spelling + ":" + expressed->spelling +
                                   ":" + std::to_string(axis) + ", " +
                                   std::to_string(scale_bits.size()) + " scales>",
                               storage->bit_width);
    }
    case 25: {  // unranked_tensor(element)
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      DecodedType t;
      t.type = ir::Type::Opaque("tensor<*x" + element->spelling + ">");
      return t;
    }
    case 26: {
      DecodedType t;
      t.type = ir::Type::Opaque("!shape.witness");
      return t;
    }
    case 33: {
      DecodedType none;
      none.kind = DecodedType::Kind::kNone;
      none.type = ir::Type::Opaque("none");
      return none;
    }
    case 41: {  // ranked_buffer(shape, element)
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadSignedList(r));
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      KILN_ASSIGN_OR_RETURN(DecodedType as_tensor, MakeTensorType(std::move(dims), *element));
      DecodedType t;
      t.type = ir::Type::Opaque("!stablehlo.buffer of " + as_tensor.type.ToString());
      return t;
    }
    case 42: {  // future(types)
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> types, ReadValueTypeList(r));
      DecodedType t;
      t.type = ir::Type::Opaque("!stablehlo.future<" + JoinTypeSpellings(types) + ">");
      return t;
    }
    default: {
      // A type code newer than this reader. Its bytes are size-delimited, so keep it opaque.
      KILN_RETURN_IF_ERROR(r.Skip(r.remaining()));
      DecodedType t;
      t.type = ir::Type::Opaque("!vhlo type with unknown code " + std::to_string(code));
      return t;
    }
  }
}

}  // namespace kiln::ingest
