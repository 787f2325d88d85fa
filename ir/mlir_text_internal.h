// Pieces of WriteMlirText (ir/mlir_text.h) shared by its files: literal and attribute syntax
// (ir/mlir_text_attrs.cc) and the StableHLO form of an op's VHLO-shaped attributes
// (ir/mlir_text_ops.cc).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ir::mlir_text {

using AttrTexts = std::vector<std::pair<std::string, std::string>>;

// A string literal with MLIR's escapes.
std::string Quote(std::string_view s);
// `@name`, quoted when it is not a bare identifier.
std::string Symbol(std::string_view name);
// A dictionary key: bare when MLIR's lexer reads it as one identifier, else quoted.
std::string Key(std::string_view name);
// `dense<...> : tensor<...>`: integers and booleans in decimal, floats and complex values as hex
// bits (exact). `element_type` overrides the element type's spelling (layouts are `index`).
StatusOr<std::string> Dense(const Attr& a, std::string_view element_type = "");
// `array<i64: 1, 2>` / `array<i1: true>` from a 1-D integer or boolean literal or an int array.
StatusOr<std::string> DenseArray(const Attr& a);
// Any attribute by its own kind (integers with their types, floats as hex bits, dictionaries,
// Shardy's attributes in #sdy syntax, ...). Enums have no kind of their own here: an error.
StatusOr<std::string> Value(const Attr& a);
// `{k = v, ...}` of named attributes.
StatusOr<std::string> DictOf(const std::vector<NamedAttr>& attrs);

// The op's inherent attributes as StableHLO spells them (properties) and its discardable ones.
Status OpAttributes(const Op& op, AttrTexts& properties, AttrTexts& discardable);

}  // namespace kiln::ir::mlir_text
