#include "ingest/encoding_names.h"

#include <array>

#include "ingest/byte_reader.h"

namespace kiln::ingest {
namespace {

template <size_t N>
std::string_view Lookup(const std::array<std::string_view, N>& names, uint64_t code) {
  return code < N ? names[static_cast<size_t>(code)] : std::string_view("unknown kind");
}

// Name tables indexed by kind code.
// clang-format off
constexpr std::array<std::string_view, 26> kVhloAttrNames = {
    "ArgResultAlias (retired)", "Array", "Boolean", "ComparisonDirection", "ComparisonType",
    "CustomCallApiVersion", "Dictionary", "FftType", "Float", "Integer", "OutputOperandAlias",
    "Precision", "RngAlgorithm", "RngDistribution", "String", "Tensor", "Transpose", "TypeAttr",
    "TypeExtensions", "ResultAccuracyMode", "ResultAccuracy", "SubAxisInfo", "AxisRef",
    "ReplicaGroupMeshAxes", "MeshAxis", "Mesh"};

constexpr std::array<std::string_view, 43> kVhloTypeNames = {
    "bool", "complex", "bf16", "f16", "f32", "f64", "f8E4M3FN", "f8E5M2", "function", "index",
    "si4", "si8", "si16", "si32", "si64", "ui4", "ui8", "ui16", "ui32", "ui64", "ranked_tensor",
    "ranked_tensor_with_encoding", "token", "tuple", "uniform_quantized", "unranked_tensor",
    "witness", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "uniform_quantized_per_axis", "si2",
    "ui2", "none", "tf32", "f8E4M3", "f8E3M4", "f4E2M1FN", "f6E2M3FN", "f6E3M2FN", "f8E8M0FNU",
    "ranked_buffer", "future"};

constexpr std::array<std::string_view, 23> kBuiltinAttrNames = {
    "Array", "Dictionary", "String", "StringWithType", "FlatSymbolRef", "SymbolRef", "TypeAttr",
    "Unit", "Integer", "Float", "CallSiteLoc", "FileLineColLoc", "FusedLoc", "FusedLocWithMetadata",
    "NameLoc", "UnknownLoc", "DenseResourceElements", "DenseArray", "DenseIntOrFPElements",
    "DenseStringElements", "SparseElements", "DistinctAttr", "FileLineColRange"};

constexpr std::array<std::string_view, 21> kBuiltinTypeNames = {
    "Integer", "Index", "Function", "BF16", "F16", "F32", "F64", "F80", "F128", "Complex", "MemRef",
    "MemRefWithMemSpace", "None", "RankedTensor", "RankedTensorWithEncoding", "Tuple",
    "UnrankedMemRef", "UnrankedMemRefWithMemSpace", "UnrankedTensor", "Vector", "VectorScalable"};
// clang-format on

}  // namespace

std::string_view VhloAttrName(uint64_t code) { return Lookup(kVhloAttrNames, code); }
std::string_view VhloTypeName(uint64_t code) { return Lookup(kVhloTypeNames, code); }
std::string_view BuiltinAttrName(uint64_t code) { return Lookup(kBuiltinAttrNames, code); }
std::string_view BuiltinTypeName(uint64_t code) { return Lookup(kBuiltinTypeNames, code); }

std::string DescribeEntry(const Container& container, const AttrTypeEntry& entry, bool is_type) {
  const std::string dialect(container.dialect_name(entry.dialect));
  if (!entry.custom) return dialect + ", textual form";
  ByteReader reader(entry.data, entry.offset);
  StatusOr<uint64_t> code = reader.ReadVarInt();
  if (!code.ok()) return dialect + ", empty entry";
  if (dialect == "vhlo") {
    return "vhlo " + std::string(is_type ? VhloTypeName(*code) : VhloAttrName(*code));
  }
  if (dialect == "builtin") {
    return "builtin " + std::string(is_type ? BuiltinTypeName(*code) : BuiltinAttrName(*code));
  }
  return dialect + " kind " + std::to_string(*code);
}

}  // namespace kiln::ingest
