// The MLIR text parser behind ReadStableHloText (ingest/text_reader.h). One recursive-descent
// parser over characters (MLIR's grammar is context sensitive: `4x4xf32`, `[0:2:1]`,
// `[b, 0, f]x[o, i, 0]->[b, 0, f]`), split over files along its seams:
//   text_scan.cc          scanning, literals of the lexical level, errors with line and column
//   text_functions.cc     module and func.func (pretty and generic forms)
//   text_parser.cc        blocks, regions, values, generic ops
//   text_types.cc         types and location attributes
//   text_attrs.cc         attributes (builtin structure, #stablehlo.* / #sdy.* dispatch)
//   text_literals.cc      numbers, dense<...> and array<...> literals
//   text_dialect_attrs.cc #stablehlo.* and #sdy.* attributes
//   text_pretty_ops.cc    the common custom form of the stablehlo ops
//   text_region_ops.cc    reduce, while, call, and the chlo / sdy forms
//   text_vhlo_form.cc     StableHLO attributes brought to the form the VHLO reader produces
#pragma once

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ingest/artifact_reader.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest::text {

inline bool IsIdStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
// Characters of bare identifiers (`stablehlo.add`, `f8E4M3FN`) and of value names (`%iterArg_3`).
inline bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '-';
}
inline bool IsValueIdChar(char c) { return IsIdChar(c); }

// Location pieces collected from a location attribute, as LocationTable collects them.
struct LocFrame {
  std::string file;
  uint64_t line = 0, column = 0;
};
struct LocInfo {
  std::vector<LocFrame> frames;    // innermost call first
  std::vector<std::string> names;  // NameLoc names, outermost first
};

// Attribute names and values of one op as the text spells them, before VHLO normalisation.
using AttrList = std::vector<ir::NamedAttr>;

class Parser {
 public:
  Parser(std::string_view text, const ReadLimits& limits) : text_(text), limits_(limits) {}
  StatusOr<ir::Module> Parse();

 private:
  friend class PrettyOps;
  struct ValueDef {
    std::vector<ir::ValueId> ids;
  };
  struct Scope {
    std::unordered_map<std::string, ValueDef> values;
    bool isolated = false;  // lookups stop here (function bodies)
  };
  struct PendingResult {
    std::string name;
    size_t count = 1;
    size_t pos = 0;
  };

  // --- scanning (text_parser.cc)
  void SkipSpace();
  bool AtEnd();
  char Peek();
  char PeekAt(size_t ahead);
  bool Consume(char c);
  bool ConsumeStr(std::string_view s);
  bool ConsumeKeyword(std::string_view keyword);
  bool PeekKeyword(std::string_view keyword);
  Status Expect(char c, std::string_view what);
  Status ExpectKeyword(std::string_view keyword);
  StatusOr<std::string> ParseBareId(std::string_view what);
  StatusOr<std::string> ParseStringLiteral();
  StatusOr<std::string> ParseSymbolName();  // after '@'
  StatusOr<int64_t> ParseInt(std::string_view what);
  StatusOr<double> ParseFloatValue();  // decimal, inf/nan words not accepted
  Status Error(std::string message) const { return ErrorAt(pos_, std::move(message)); }
  Status ErrorAt(size_t pos, std::string message) const;
  std::string Where(size_t pos) const;
  // `status` with "<text>:line:col: " of `pos` in front unless it already names a position.
  Status Positioned(Status status, size_t pos) const;
  Status Enter();  // recursion guard for attributes and types
  void Leave() { --depth_; }

  // --- structure (text_parser.cc)
  Status ParseTopLevel(ir::Module& module);
  Status ParseModuleBody(ir::Module& module);
  Status ParseFunction(ir::Module& module, int32_t loc_hint);
  // The generic forms "builtin.module"() ({...}) and "func.func"() <{...}> ({...}).
  Status ParseGenericModule(ir::Module& module);
  Status ParseGenericFunction(ir::Module& module);
  bool PeekGenericName(std::string_view name);
  Status ParseOp(std::vector<ir::Op>& out, std::string_view parent, int depth);
  Status ParseGenericOp(ir::Op& op, std::vector<ir::Type>& result_types, std::string_view parent,
                        int depth);
  Status ParseRegion(ir::Region& region, std::string_view parent, int depth,
                     const std::vector<std::pair<std::string, ir::Type>>* entry_args);
  Status ParseBlockBody(ir::Block& block, std::string_view parent, int depth);
  Status ParseBlockArgList(std::vector<std::pair<std::string, ir::Type>>& args);
  StatusOr<ir::ValueId> ParseValueUse();
  StatusOr<std::vector<ir::ValueId>> ParseValueUseList();  // possibly empty, comma separated
  Status DefineValue(const std::string& name, std::vector<ir::ValueId> ids, size_t pos);
  const ValueDef* Lookup(const std::string& name) const;
  Status ParseTrailingLocation(int32_t& loc);
  void PushScope(bool isolated) { scopes_.push_back({{}, isolated}); }
  void PopScope() { scopes_.pop_back(); }

  // --- types and locations (text_types.cc)
  StatusOr<ir::Type> ParseType();
  StatusOr<std::vector<ir::Type>> ParseTypeListParens();  // `(t, t)` or `()`
  // `(ins) -> outs` or `(ins) -> out`.
  Status ParseFunctionType(std::vector<ir::Type>& inputs, std::vector<ir::Type>& results);
  StatusOr<std::vector<ir::Type>> ParseResultTypes();  // `t` or `(t, ...)`
  StatusOr<ir::DType> ParseElementType();
  bool PeekTypeStart();
  Status ParseLocationBody(LocInfo& out, int depth);  // inside loc(...)
  int32_t InternLocation(const LocInfo& info);
  Status ScanAliases();

  // --- attributes (text_attrs.cc)
  StatusOr<ir::Attr> ParseAttr();
  Status ParseAttrDict(AttrList& out);  // `{...}`
  StatusOr<ir::Attr> ParseDense(const ir::Type* elided_type);
  StatusOr<ir::Attr> ParseDenseArray();  // after `array`
  StatusOr<ir::Attr> ParseHashAttr();    // `#...`
  StatusOr<ir::Attr> ParseStablehloAttr(std::string_view mnemonic);
  StatusOr<ir::Attr> ParseSdyAttr(std::string_view mnemonic);
  // `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` as a dictionary of the nine ConvDimensionNumbers.
  StatusOr<ir::Attr> ParseConvDims();
  StatusOr<ir::Attr> ParseSdySharding();  // `<@mesh, [{"x"}, {}], replicated={"y"}>`
  StatusOr<ir::Attr> ParseSdyAxisList();  // `{"x", "y":(1)2, ?}` as [axis_ref] (+ open flag)
  Status SkipBalanced(char open, char close);
  StatusOr<ir::Attr> ParseNumberAttr();
  StatusOr<std::vector<int64_t>> ParseIntListBrackets();          // `[1, 2]`
  StatusOr<ir::Attr> ParseStructuredBody(std::string_view what);  // `<k = v, ...>` dictionary
  Status ChargeAttrBytes(uint64_t bytes);

  // --- pretty forms (text_pretty_ops.cc)
  // Returns false in `handled` if `name` has no custom form here.
  Status ParsePrettyOp(const std::string& name, ir::Op& op, std::vector<ir::Type>& result_types,
                       std::string_view parent, int depth, bool& handled);

  std::string_view text_;
  ReadLimits limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  uint64_t attr_bytes_ = 0;
  ir::Module* module_ = nullptr;
  std::vector<Scope> scopes_;
  std::vector<PendingResult> pending_;
  // `#name = ...` / `!name = ...` aliases: where their value starts in the text.
  std::unordered_map<std::string, size_t> attr_aliases_, type_aliases_;
  std::unordered_map<std::string, LocInfo> loc_cache_;
  std::unordered_map<std::string, int32_t> loc_index_;
  std::vector<std::string> alias_stack_;
  // Set by the compact `reduce ... applies op` form: its synthesized body takes the op's location.
  bool synthesized_body_ = false;
};

// A 1-D i64 dense literal, the form VHLO gives `array<i64: ...>` and dimension lists.
ir::Attr I64Tensor(const std::vector<int64_t>& values);
// A rank-`shape.size()` i64 or i1 dense literal.
ir::Attr DenseOf(ir::DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);

// text_vhlo_form.cc: gives a parsed op the attributes ReadPortableArtifact would produce for it
// (VHLO defaults, flattened dimension numbers, schema order; everything else discardable).
// `props` are the op's properties (`<{...}>` and the attributes of its custom form), `dict` its
// attribute dictionary.
Status ToVhloForm(ir::Op& op, AttrList props, AttrList dict, const ir::Module& module);

}  // namespace kiln::ingest::text
