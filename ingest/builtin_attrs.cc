// Builtin-dialect attribute and type encodings (mlir/IR/BuiltinDialectBytecode.td). They appear in
// portable artifacts where VHLO leaves MLIR's own constructs alone: the module's attributes, op
// attribute dictionaries and their keys, locations, and the tensor types of Shardy regions bridged
// by builtin.unrealized_conversion_cast. Locations are decoded separately (locations.cc); here they
// are opaque.
#include <string>

#include "ingest/attr_type_decoder.h"
#include "ingest/encoding_names.h"

namespace kiln::ingest {
namespace {

ir::Attr Opaque(std::string_view what) { return ir::Attr::Opaque(std::string(what)); }

}  // namespace

StatusOr<ir::Attr> AttrTypeDecoder::DecodeBuiltinAttr(ByteReader& r, uint64_t code) {
  switch (code) {
    case kBuiltinArrayAttr: {
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> elements, ReadAttrList(r));
      return ir::Attr::Array(std::move(elements));
    }
    case kBuiltinDictionaryAttr:
      return ReadDictionary(r);
    case kBuiltinStringAttr: {
      KILN_ASSIGN_OR_RETURN(std::string_view text, container_.ReadStringRef(r));
      return ir::Attr::String(std::string(text));
    }
    case kBuiltinStringWithTypeAttr: {
      KILN_ASSIGN_OR_RETURN(std::string_view text, container_.ReadStringRef(r));
      KILN_ASSIGN_OR_RETURN(uint64_t type_index, r.ReadVarInt());
      (void)type_index;  // a typed string is still just a string to Kiln
      return ir::Attr::String(std::string(text));
    }
    case kBuiltinFlatSymbolRefAttr: {
      KILN_ASSIGN_OR_RETURN(const ir::Attr* root, ReadAttr(r));
      if (root->kind != ir::Attr::Kind::kString) return r.Error("symbol name is not a string");
      return ir::Attr::SymbolRef(root->str);
    }
    case kBuiltinSymbolRefAttr: {
      KILN_ASSIGN_OR_RETURN(const ir::Attr* root, ReadAttr(r));
      if (root->kind != ir::Attr::Kind::kString) return r.Error("symbol name is not a string");
      std::string path = root->str;
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Attr> nested, ReadAttrList(r));
      for (const ir::Attr& part : nested) path += "::" + part.str;
      return ir::Attr::SymbolRef(std::move(path));
    }
    case kBuiltinTypeAttr: {
      KILN_ASSIGN_OR_RETURN(uint64_t type_index, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(const DecodedType* type, Type(type_index));
      type_attr_ref_[static_cast<size_t>(current_attr_)] = static_cast<int64_t>(type_index);
      if (type->kind == DecodedType::Kind::kNone) return ir::Attr::None();
      return ir::Attr::TypeValue(type->type);
    }
    case kBuiltinUnitAttr:
      return ir::Attr::Unit();
    case kBuiltinIntegerAttr: {
      KILN_ASSIGN_OR_RETURN(const DecodedType* type, ReadType(r));
      return ReadIntegerPayload(r, *type);
    }
    case kBuiltinFloatAttr: {
      KILN_ASSIGN_OR_RETURN(const DecodedType* type, ReadType(r));
      return ReadFloatPayload(r, *type);
    }
    case kBuiltinDenseArrayAttr: {
      // `array<i64: 1, 2>`: element type, element count, raw data (bools one byte each).
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      KILN_ASSIGN_OR_RETURN(uint64_t size, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> blob, r.ReadBlob());
      if (size > static_cast<uint64_t>(INT64_MAX)) return r.Error("dense array is too large");
      KILN_ASSIGN_OR_RETURN(DecodedType type,
                            MakeTensorType({static_cast<int64_t>(size)}, *element));
      return MakeDenseLiteral(type, blob, /*vhlo_bool_packing=*/false);
    }
    case kBuiltinDenseIntOrFPElementsAttr: {
      KILN_ASSIGN_OR_RETURN(const DecodedType* type, ReadType(r));
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> blob, r.ReadBlob());
      return MakeDenseLiteral(*type, blob, /*vhlo_bool_packing=*/false);
    }
    case kBuiltinCallSiteLoc:
    case kBuiltinFileLineColLoc:
    case kBuiltinFusedLoc:
    case kBuiltinFusedLocWithMetadata:
    case kBuiltinNameLoc:
    case kBuiltinUnknownLoc:
    case kBuiltinFileLineColRange:
      KILN_RETURN_IF_ERROR(r.Skip(r.remaining()));
      return Opaque("location");
    default:
      // Resources, string/sparse elements, distinct attributes and codes newer than this reader:
      // nothing in a portable artifact Kiln executes needs them.
      KILN_RETURN_IF_ERROR(r.Skip(r.remaining()));
      return ir::Attr::Opaque("#builtin." + std::string(BuiltinAttrName(code)) + " (kind " +
                              std::to_string(code) + ")");
  }
}

StatusOr<DecodedType> AttrTypeDecoder::DecodeBuiltinType(ByteReader& r, uint64_t code) {
  using ir::DType;
  switch (code) {
    case 0: {  // Integer: varint (width << 2 | signedness); 0 signless, 1 signed, 2 unsigned
      KILN_ASSIGN_OR_RETURN(uint64_t packed, r.ReadVarInt());
      const uint64_t width = packed >> 2;
      const uint64_t signedness = packed & 3;
      const bool is_unsigned = signedness == 2;
      std::string spelling = (signedness == 1 ? "si"
                              : is_unsigned   ? "ui"
                                              : "i") +
                             std::to_string(width);
      // clang-format off
      switch (width) {
        case 1:
          if (signedness == 0) return ElementType(DType::kPred);
          return ElementType(is_unsigned ? DType::kU1 : DType::kS1);
        case 2: return ElementType(is_unsigned ? DType::kU2 : DType::kS2);
        case 4: return ElementType(is_unsigned ? DType::kU4 : DType::kS4);
        case 8: return ElementType(is_unsigned ? DType::kU8 : DType::kS8);
        case 16: return ElementType(is_unsigned ? DType::kU16 : DType::kS16);
        case 32: return ElementType(is_unsigned ? DType::kU32 : DType::kS32);
        case 64: return ElementType(is_unsigned ? DType::kU64 : DType::kS64);
        default: {
          DecodedType odd = OpaqueElementType(std::move(spelling), width <= 64 ? int(width) : 0);
          odd.is_signed = !is_unsigned;
          return odd;
        }
      }
      // clang-format on
    }
    case 2: {  // Function(inputs, results)
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> inputs, ReadValueTypeList(r));
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> results, ReadValueTypeList(r));
      return FunctionType(std::move(inputs), std::move(results));
    }
    // clang-format off
    case 1: return ElementType(DType::kS64);  // index: 64-bit in dense storage (layouts)
    case 3: return ElementType(DType::kBF16);
    case 4: return ElementType(DType::kF16);
    case 5: return ElementType(DType::kF32);
    case 6: return ElementType(DType::kF64);
    case 7: return OpaqueElementType("f80", 80);
    case 8: return OpaqueElementType("f128", 128);
    // clang-format on
    case 9: {  // Complex(element)
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      if (element->is_element() && element->dtype() == DType::kF32) {
        return ElementType(DType::kC64);
      }
      if (element->is_element() && element->dtype() == DType::kF64) {
        return ElementType(DType::kC128);
      }
      return OpaqueElementType("complex<" + element->spelling + ">", 0);
    }
    case 12: {
      DecodedType none;
      none.kind = DecodedType::Kind::kNone;
      none.type = ir::Type::Opaque("none");
      return none;
    }
    case 13:    // RankedTensor(shape, element)
    case 14: {  // RankedTensorWithEncoding(encoding, shape, element)
      if (code == 14) {
        // Only the index is consumed: the encoding may belong to a dialect Kiln does not read.
        KILN_ASSIGN_OR_RETURN(uint64_t encoding, r.ReadVarInt());
        (void)encoding;
      }
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadSignedList(r));
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      return MakeTensorType(std::move(dims), *element);
    }
    case 15: {  // Tuple
      DecodedType tuple;
      KILN_ASSIGN_OR_RETURN(std::vector<ir::Type> elements, ReadValueTypeList(r));
      tuple.type = ir::Type::Tuple(std::move(elements));
      return tuple;
    }
    case 18: {  // UnrankedTensor(element)
      KILN_ASSIGN_OR_RETURN(const DecodedType* element, ReadType(r));
      DecodedType t;
      t.type = ir::Type::Opaque("tensor<*x" + element->spelling + ">");
      return t;
    }
    default: {
      // MemRef, vector and codes newer than this reader.
      KILN_RETURN_IF_ERROR(r.Skip(r.remaining()));
      DecodedType t;
      t.type = ir::Type::Opaque("builtin " + std::string(BuiltinTypeName(code)) + " type");
      return t;
    }
  }
}

}  // namespace kiln::ingest
