// Human names for the kind codes of VHLO and builtin attribute/type entries, so that errors say
// "attribute #12 (vhlo Tensor)" rather than "attribute #12 (code 15)".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ingest/bytecode_container.h"

namespace kiln::ingest {

// Kind codes of VHLO attributes (stablehlo/dialect/VhloBytecode.cpp); they never change meaning.
enum VhloAttrCode : uint64_t {
  kVhloArrayAttr = 1,
  kVhloBooleanAttr = 2,
  kVhloComparisonDirectionAttr = 3,
  kVhloComparisonTypeAttr = 4,
  kVhloCustomCallApiVersionAttr = 5,
  kVhloDictionaryAttr = 6,
  kVhloFftTypeAttr = 7,
  kVhloFloatAttr = 8,
  kVhloIntegerAttr = 9,
  kVhloOutputOperandAliasAttr = 10,
  kVhloPrecisionAttr = 11,
  kVhloRngAlgorithmAttr = 12,
  kVhloRngDistributionAttr = 13,
  kVhloStringAttr = 14,
  kVhloTensorAttr = 15,
  kVhloTransposeAttr = 16,
  kVhloTypeAttr = 17,
  kVhloTypeExtensionsAttr = 18,
  kVhloResultAccuracyModeAttr = 19,
  kVhloResultAccuracyAttr = 20,
  kVhloSubAxisInfoAttr = 21,
  kVhloAxisRefAttr = 22,
  kVhloReplicaGroupMeshAxesAttr = 23,
  kVhloMeshAxisAttr = 24,
  kVhloMeshAttr = 25,
};

// Kind codes of builtin attributes (mlir/IR/BuiltinDialectBytecode.td).
enum BuiltinAttrCode : uint64_t {
  kBuiltinArrayAttr = 0,
  kBuiltinDictionaryAttr = 1,
  kBuiltinStringAttr = 2,
  kBuiltinStringWithTypeAttr = 3,
  kBuiltinFlatSymbolRefAttr = 4,
  kBuiltinSymbolRefAttr = 5,
  kBuiltinTypeAttr = 6,
  kBuiltinUnitAttr = 7,
  kBuiltinIntegerAttr = 8,
  kBuiltinFloatAttr = 9,
  kBuiltinCallSiteLoc = 10,
  kBuiltinFileLineColLoc = 11,
  kBuiltinFusedLoc = 12,
  kBuiltinFusedLocWithMetadata = 13,
  kBuiltinNameLoc = 14,
  kBuiltinUnknownLoc = 15,
  kBuiltinDenseResourceElementsAttr = 16,
  kBuiltinDenseArrayAttr = 17,
  kBuiltinDenseIntOrFPElementsAttr = 18,
  kBuiltinDenseStringElementsAttr = 19,
  kBuiltinSparseElementsAttr = 20,
  kBuiltinDistinctAttr = 21,
  kBuiltinFileLineColRange = 22,
};

std::string_view VhloAttrName(uint64_t code);
std::string_view VhloTypeName(uint64_t code);
std::string_view BuiltinAttrName(uint64_t code);
std::string_view BuiltinTypeName(uint64_t code);

// "vhlo Tensor", "builtin NameLoc", "sdy kind 3", "textual form `#foo<...>`": peeks at an entry.
std::string DescribeEntry(const Container& container, const AttrTypeEntry& entry, bool is_type);

}  // namespace kiln::ingest
