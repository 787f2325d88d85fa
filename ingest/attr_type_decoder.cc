// AttrTypeDecoder: index tables, memoization, cycle and depth checks, the expansion budget, and
// dispatch to the per-dialect decoders. Entries of dialects Kiln does not know become
// opaque values: their bytes are size-delimited, so skipping them is always safe.
#include "ingest/attr_type_decoder.h"

#include <string>
#include <unordered_map>

#include "ingest/encoding_names.h"

namespace kiln::ingest {
namespace {

uint64_t TypeFootprint(const ir::Type& type) {
  uint64_t bytes = sizeof(ir::Type) + type.dims.size() * sizeof(int64_t) + type.opaque.size();
  for (const ir::Type& element : type.elements) bytes += TypeFootprint(element);
  return bytes;
}

// Builtin element types that MLIR writes in textual (asm-fallback) form, e.g. the small floats.
const std::unordered_map<std::string_view, ir::DType>& AsmElementTypes() {
  static const auto* table = new std::unordered_map<std::string_view, ir::DType>{
      {"i1", ir::DType::kPred},
      {"f16", ir::DType::kF16},
      {"bf16", ir::DType::kBF16},
      {"f32", ir::DType::kF32},
      {"f64", ir::DType::kF64},
      {"f8E5M2", ir::DType::kF8E5M2},
      {"f8E4M3FN", ir::DType::kF8E4M3FN},
      {"f8E4M3B11FNUZ", ir::DType::kF8E4M3B11FNUZ},
      {"f8E5M2FNUZ", ir::DType::kF8E5M2FNUZ},
      {"f8E4M3FNUZ", ir::DType::kF8E4M3FNUZ},
      {"f8E4M3", ir::DType::kF8E4M3},
      {"f8E3M4", ir::DType::kF8E3M4},
      {"f8E8M0FNU", ir::DType::kF8E8M0FNU},
      {"f4E2M1FN", ir::DType::kF4E2M1FN},
      {"f6E2M3FN", ir::DType::kF6E2M3FN},
      {"f6E3M2FN", ir::DType::kF6E3M2FN},
  };
  return *table;
}

}  // namespace

uint64_t AttrFootprint(const ir::Attr& attr) {
  uint64_t bytes = sizeof(ir::Attr) + attr.str.size() + attr.data.size() +
                   TypeFootprint(attr.type) - sizeof(ir::Type);
  for (const ir::Attr& element : attr.array) bytes += AttrFootprint(element);
  for (const auto& [key, value] : attr.dict) bytes += key.size() + AttrFootprint(value);
  return bytes;
}

AttrTypeDecoder::AttrTypeDecoder(const Container& container, ReadLimits limits)
    : container_(container),
      limits_(limits),
      attr_state_(container.attrs.size(), State::kUnvisited),
      type_state_(container.types.size(), State::kUnvisited),
      attrs_(container.attrs.size()),
      types_(container.types.size()),
      type_attr_ref_(container.attrs.size(), -1) {}

AttrTypeDecoder::~AttrTypeDecoder() = default;

Status AttrTypeDecoder::EnterNested(std::string_view what, uint64_t index) {
  if (depth_ >= limits_.max_nesting) {
    return DataLoss(std::string(what) + " #" + std::to_string(index) + " is nested more than " +
                    std::to_string(limits_.max_nesting) + " levels deep");
  }
  ++depth_;
  return Status::Ok();
}

Status AttrTypeDecoder::CheckBudget(uint64_t bytes) const {
  if (bytes >
      limits_.max_total_attr_bytes - std::min(charged_bytes_, limits_.max_total_attr_bytes)) {
    return ResourceExhausted("the artifact's attributes expand to more than " +
                             std::to_string(limits_.max_total_attr_bytes) +
                             " bytes in memory; refusing to read it");
  }
  return Status::Ok();
}

Status AttrTypeDecoder::Charge(uint64_t bytes) {
  KILN_RETURN_IF_ERROR(CheckBudget(bytes));
  charged_bytes_ += bytes;
  return Status::Ok();
}

Status AttrTypeDecoder::ChargeCopy(const ir::Attr& attr) { return Charge(AttrFootprint(attr)); }

StatusOr<const ir::Attr*> AttrTypeDecoder::ReadAttr(ByteReader& reader) {
  KILN_ASSIGN_OR_RETURN(uint64_t index, reader.ReadVarInt());
  return Attr(index);
}

StatusOr<const DecodedType*> AttrTypeDecoder::ReadType(ByteReader& reader) {
  KILN_ASSIGN_OR_RETURN(uint64_t index, reader.ReadVarInt());
  return Type(index);
}

StatusOr<const ir::Attr*> AttrTypeDecoder::Attr(uint64_t index) {
  if (index >= attrs_.size()) {
    return DataLoss("attribute index " + std::to_string(index) + " out of range (" +
                    std::to_string(attrs_.size()) + " attributes)");
  }
  const size_t i = static_cast<size_t>(index);
  if (attr_state_[i] == State::kDone) return attrs_[i].get();
  if (attr_state_[i] == State::kInProgress) {
    return DataLoss("attribute #" + std::to_string(index) + " refers to itself");
  }
  KILN_RETURN_IF_ERROR(EnterNested("attribute", index));
  attr_state_[i] = State::kInProgress;
  const uint64_t enclosing_attr = current_attr_;
  current_attr_ = index;
  StatusOr<ir::Attr> decoded = DecodeAttrEntry(container_.attrs[i]);
  current_attr_ = enclosing_attr;
  --depth_;

  Status status = decoded.ok() ? Charge(AttrFootprint(*decoded)) : decoded.status();
  if (!status.ok()) {
    attr_state_[i] = State::kUnvisited;
    return status.WithContext("attribute #" + std::to_string(index) + " (" +
                              DescribeEntry(container_, container_.attrs[i], false) + ")");
  }
  attrs_[i] = std::make_unique<ir::Attr>(std::move(decoded).value());
  attr_state_[i] = State::kDone;
  return attrs_[i].get();
}

StatusOr<ir::Attr> AttrTypeDecoder::DecodeAttrEntry(const AttrTypeEntry& entry) {
  ByteReader reader(entry.data, entry.offset);
  if (!entry.custom) {
    KILN_ASSIGN_OR_RETURN(std::string_view text, reader.ReadNulTerminatedString());
    return ir::Attr::Opaque(std::string(text));
  }
  const std::string_view dialect = container_.dialect_name(entry.dialect);
  KILN_ASSIGN_OR_RETURN(uint64_t code, reader.ReadVarInt());
  if (dialect != "vhlo" && dialect != "builtin" && dialect != "sdy") {
    // A dialect Kiln does not model: keep a description, skip its payload.
    return ir::Attr::Opaque("#" + std::string(dialect) + " attribute (kind " +
                            std::to_string(code) + ")");
  }
  StatusOr<ir::Attr> attr = dialect == "vhlo"      ? DecodeVhloAttr(reader, code)
                            : dialect == "builtin" ? DecodeBuiltinAttr(reader, code)
                                                   : DecodeSdyAttr(reader, code);
  if (attr.ok() && !reader.empty()) {
    return reader.Error(std::to_string(reader.remaining()) + " unexpected trailing bytes");
  }
  return attr;
}

StatusOr<const DecodedType*> AttrTypeDecoder::Type(uint64_t index) {
  if (index >= types_.size()) {
    return DataLoss("type index " + std::to_string(index) + " out of range (" +
                    std::to_string(types_.size()) + " types)");
  }
  const size_t i = static_cast<size_t>(index);
  if (type_state_[i] == State::kDone) return types_[i].get();
  if (type_state_[i] == State::kInProgress) {
    return DataLoss("type #" + std::to_string(index) + " refers to itself");
  }
  KILN_RETURN_IF_ERROR(EnterNested("type", index));
  type_state_[i] = State::kInProgress;
  StatusOr<DecodedType> decoded = DecodeTypeEntry(container_.types[i]);
  --depth_;

  Status status = decoded.ok() ? Charge(TypeFootprint(decoded->type)) : decoded.status();
  if (!status.ok()) {
    type_state_[i] = State::kUnvisited;
    return status.WithContext("type #" + std::to_string(index) + " (" +
                              DescribeEntry(container_, container_.types[i], true) + ")");
  }
  types_[i] = std::make_unique<DecodedType>(std::move(decoded).value());
  type_state_[i] = State::kDone;
  return types_[i].get();
}

StatusOr<DecodedType> AttrTypeDecoder::DecodeTypeEntry(const AttrTypeEntry& entry) {
  ByteReader reader(entry.data, entry.offset);
  const std::string_view dialect = container_.dialect_name(entry.dialect);
  if (!entry.custom) {
    KILN_ASSIGN_OR_RETURN(std::string_view text, reader.ReadNulTerminatedString());
    if (dialect == "builtin") {
      auto it = AsmElementTypes().find(text);
      if (it != AsmElementTypes().end()) return ElementType(it->second);
    }
    DecodedType opaque;
    opaque.type = ir::Type::Opaque(std::string(text));
    return opaque;
  }
  KILN_ASSIGN_OR_RETURN(uint64_t code, reader.ReadVarInt());
  if (dialect != "vhlo" && dialect != "builtin") {
    DecodedType opaque;
    opaque.type =
        ir::Type::Opaque("!" + std::string(dialect) + " type (kind " + std::to_string(code) + ")");
    return opaque;
  }
  StatusOr<DecodedType> type =
      dialect == "vhlo" ? DecodeVhloType(reader, code) : DecodeBuiltinType(reader, code);
  if (type.ok() && !reader.empty()) {
    return reader.Error(std::to_string(reader.remaining()) + " unexpected trailing bytes");
  }
  return type;
}

StatusOr<ir::Type> AttrTypeDecoder::ValueType(uint64_t index) {
  KILN_ASSIGN_OR_RETURN(const DecodedType* type, Type(index));
  switch (type->kind) {
    case DecodedType::Kind::kValue:
      return type->type;
    case DecodedType::Kind::kElement:
      return ir::Type::Opaque(type->spelling);
    case DecodedType::Kind::kFunction:
      return type->type;
    case DecodedType::Kind::kNone:
      return ir::Type::Opaque("none");
  }
  return type->type;
}

StatusOr<const DecodedType*> AttrTypeDecoder::TypeAttrValue(uint64_t attr_index) {
  KILN_ASSIGN_OR_RETURN(const ir::Attr* attr, Attr(attr_index));
  (void)attr;
  const int64_t type_index = type_attr_ref_[static_cast<size_t>(attr_index)];
  if (type_index < 0) return nullptr;
  return Type(static_cast<uint64_t>(type_index));
}

StatusOr<std::vector<AttrTypeDecoder::DictEntry>> AttrTypeDecoder::DictionaryEntries(
    uint64_t attr_index) {
  if (attr_index >= container_.attrs.size()) {
    return DataLoss("attribute index " + std::to_string(attr_index) + " out of range");
  }
  const AttrTypeEntry& entry = container_.attrs[static_cast<size_t>(attr_index)];
  const std::string_view dialect = container_.dialect_name(entry.dialect);
  ByteReader r(entry.data, entry.offset);
  uint64_t code = 0;
  if (entry.custom) {
    KILN_ASSIGN_OR_RETURN(code, r.ReadVarInt());
  }
  const bool is_dict = entry.custom && ((dialect == "builtin" && code == kBuiltinDictionaryAttr) ||
                                        (dialect == "vhlo" && code == kVhloDictionaryAttr));
  if (!is_dict) {
    return DataLoss("attribute #" + std::to_string(attr_index) + " (" +
                    DescribeEntry(container_, entry, false) + ") is not a dictionary");
  }
  KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("dictionary entry", 2));
  std::vector<DictEntry> entries;
  entries.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Attr* key, ReadAttr(r));
    if (key->kind != ir::Attr::Kind::kString) return r.Error("dictionary key is not a string");
    KILN_ASSIGN_OR_RETURN(uint64_t value, r.ReadVarInt());
    if (value >= container_.attrs.size()) {
      return r.Error("dictionary value index " + std::to_string(value) + " out of range");
    }
    entries.push_back({key->str, value});
  }
  return entries;
}

// ---- payload helpers shared by the VHLO and builtin decoders ----

StatusOr<std::vector<ir::Attr>> AttrTypeDecoder::ReadAttrList(ByteReader& r) {
  KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("attribute list"));
  std::vector<ir::Attr> out;
  out.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Attr* element, ReadAttr(r));
    KILN_RETURN_IF_ERROR(CheckBudget(AttrFootprint(*element)));
    out.push_back(*element);
  }
  return out;
}

StatusOr<std::vector<ir::Type>> AttrTypeDecoder::ReadValueTypeList(ByteReader& r) {
  KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("type list"));
  std::vector<ir::Type> out;
  out.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(uint64_t index, r.ReadVarInt());
    KILN_ASSIGN_OR_RETURN(ir::Type type, ValueType(index));
    KILN_RETURN_IF_ERROR(CheckBudget(TypeFootprint(type)));
    out.push_back(std::move(type));
  }
  return out;
}

StatusOr<std::vector<int64_t>> AttrTypeDecoder::ReadSignedList(ByteReader& r) {
  KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("integer list"));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t value, r.ReadSignedVarInt());
    out.push_back(value);
  }
  return out;
}

StatusOr<ir::Attr> AttrTypeDecoder::ReadDictionary(ByteReader& r) {
  KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("dictionary entry", 2));
  ir::Attr dict;
  dict.kind = ir::Attr::Kind::kDict;
  dict.dict.reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    KILN_ASSIGN_OR_RETURN(uint64_t key_index, r.ReadVarInt());
    KILN_ASSIGN_OR_RETURN(const ir::Attr* key, Attr(key_index));
    if (key->kind != ir::Attr::Kind::kString) {
      return r.Error("dictionary key (attribute #" + std::to_string(key_index) +
                     ") is not a string");
    }
    KILN_ASSIGN_OR_RETURN(const ir::Attr* value, ReadAttr(r));
    KILN_RETURN_IF_ERROR(CheckBudget(AttrFootprint(*value)));
    dict.dict.emplace_back(key->str, *value);
  }
  return dict;
}

std::string JoinTypeSpellings(const std::vector<ir::Type>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].ToString();
  return out;
}

DecodedType AttrTypeDecoder::FunctionType(std::vector<ir::Type> inputs,
                                          std::vector<ir::Type> results) {
  DecodedType fn;
  fn.kind = DecodedType::Kind::kFunction;
  fn.type = ir::Type::Opaque("(" + JoinTypeSpellings(inputs) + ") -> (" +
                             JoinTypeSpellings(results) + ")");
  fn.inputs = std::move(inputs);
  fn.results = std::move(results);
  return fn;
}

DecodedType AttrTypeDecoder::ElementType(ir::DType dtype) {
  DecodedType t;
  t.kind = DecodedType::Kind::kElement;
  t.type = ir::Type::Tensor(dtype, {});
  t.spelling = std::string(ir::DTypeName(dtype));
  t.is_signed = !ir::IsUnsignedInt(dtype);
  // The width of its APInt/APFloat payload: the packed width, but 1 for pred, and none for
  // complex scalars.
  t.bit_width = dtype == ir::DType::kPred ? 1 : ir::IsComplex(dtype) ? 0 : ir::DTypeBits(dtype);
  return t;
}

DecodedType AttrTypeDecoder::OpaqueElementType(std::string spelling, int bit_width) {
  DecodedType t;
  t.kind = DecodedType::Kind::kElement;
  t.type = ir::Type::Tensor(ir::DType::kInvalid, {});
  t.spelling = std::move(spelling);
  t.bit_width = bit_width;
  return t;
}

StatusOr<DecodedType> AttrTypeDecoder::MakeTensorType(std::vector<int64_t> dims,
                                                      const DecodedType& element) {
  for (int64_t& d : dims) {
    if (d < 0) d = ir::kDynamicDim;  // MLIR writes kDynamic (INT64_MIN) as a negative svarint
  }
  DecodedType t;
  if (element.is_element() && element.dtype() != ir::DType::kInvalid) {
    t.type = ir::Type::Tensor(element.dtype(), std::move(dims));
    return t;
  }
  // Element types the IR cannot hold (quantized, index, tf32, ...): keep a faithful spelling so the
  // compiler can name the unsupported type.
  std::string spelling = "tensor<";
  for (int64_t d : dims) spelling += (d == ir::kDynamicDim ? "?" : std::to_string(d)) + "x";
  spelling += element.is_element() ? element.spelling : element.type.ToString();
  spelling += ">";
  t.type = ir::Type::Opaque(std::move(spelling));
  return t;
}

}  // namespace kiln::ingest
