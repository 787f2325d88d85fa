// Attributes: builtin ones (integers, floats, strings, arrays, dictionaries, literals, symbol
// references, types) and the dispatch to StableHLO's (#stablehlo.*) and Shardy's (#sdy.*), in the
// forms the bytecode reader gives them (ir/attr.h). Aliases (#name = ...) resolve where used.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {

Status Parser::ParseAttrDict(AttrList& out) {
  KILN_RETURN_IF_ERROR(Expect('{', "to open an attribute dictionary"));
  if (Consume('}')) return Status::Ok();
  do {
    std::string name;
    if (Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(name, ParseStringLiteral());
    } else {
      KILN_ASSIGN_OR_RETURN(name, ParseBareId("an attribute name"));
    }
    if (Consume('=')) {
      KILN_ASSIGN_OR_RETURN(ir::Attr value, ParseAttr());
      out.push_back({std::move(name), std::move(value)});
    } else {
      out.push_back({std::move(name), ir::Attr::Unit()});
    }
  } while (Consume(','));
  return Expect('}', "to close an attribute dictionary");
}

StatusOr<ir::Attr> Parser::ParseAttr() {
  KILN_RETURN_IF_ERROR(Enter());
  struct Guard {
    Parser* p;
    ~Guard() { p->Leave(); }
  } guard{this};
  const char c = Peek();
  if (c == '\0') return Error("expected an attribute, found the end of the text");
  if (c == '[') {
    ++pos_;
    std::vector<ir::Attr> elements;
    if (!Consume(']')) {
      do {
        KILN_ASSIGN_OR_RETURN(ir::Attr e, ParseAttr());
        elements.push_back(std::move(e));
      } while (Consume(','));
      KILN_RETURN_IF_ERROR(Expect(']', "to close an array attribute"));
    }
    return ir::Attr::Array(std::move(elements));
  }
  if (c == '{') {
    AttrList list;
    KILN_RETURN_IF_ERROR(ParseAttrDict(list));
    std::stable_sort(list.begin(), list.end(), [](const ir::NamedAttr& a, const ir::NamedAttr& b) {
      return a.name < b.name;
    });
    std::vector<std::pair<std::string, ir::Attr>> entries;
    for (ir::NamedAttr& a : list) entries.emplace_back(std::move(a.name), std::move(a.value));
    return ir::Attr::Dict(std::move(entries));
  }
  if (c == '"') {
    KILN_ASSIGN_OR_RETURN(std::string s, ParseStringLiteral());
    if (Consume(':')) KILN_RETURN_IF_ERROR(ParseType().status());
    return ir::Attr::String(std::move(s));
  }
  if (c == '@') {
    KILN_ASSIGN_OR_RETURN(std::string s, ParseSymbolName());
    while (ConsumeStr("::")) {
      KILN_ASSIGN_OR_RETURN(std::string nested, ParseSymbolName());
      s += "::@" + nested;
    }
    return ir::Attr::SymbolRef(std::move(s));
  }
  if (c == '#') return ParseHashAttr();
  if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return ParseNumberAttr();
  if (c == '(') {
    // A function type (func.func's function_type): kept as tuple<tuple<ins>, tuple<outs>>.
    std::vector<ir::Type> inputs, results;
    KILN_RETURN_IF_ERROR(ParseFunctionType(inputs, results));
    ir::Attr attr = ir::Attr::TypeValue(
        ir::Type::Tuple({ir::Type::Tuple(std::move(inputs)), ir::Type::Tuple(std::move(results))}));
    attr.str = "function";
    return attr;
  }
  if (ConsumeKeyword("true")) return ir::Attr::Bool(true);
  if (ConsumeKeyword("false")) return ir::Attr::Bool(false);
  if (ConsumeKeyword("unit")) return ir::Attr::Unit();
  if (ConsumeKeyword("dense")) return ParseDense(nullptr);
  if (ConsumeKeyword("array")) return ParseDenseArray();
  if (PeekKeyword("dense_resource")) {
    return Error(
        "dense_resource literals are not supported: print the program with its "
        "constants inline");
  }
  if (ConsumeKeyword("loc")) {
    KILN_RETURN_IF_ERROR(Expect('(', "after 'loc'"));
    LocInfo info;
    KILN_RETURN_IF_ERROR(ParseLocationBody(info, 0));
    KILN_RETURN_IF_ERROR(Expect(')', "to close the location"));
    return ir::Attr::Opaque("location");
  }
  if (PeekTypeStart()) {
    const size_t start = pos_;
    StatusOr<ir::Type> type = ParseType();
    if (!type.ok()) return ErrorAt(start, "expected an attribute");
    if (type->kind == ir::Type::Kind::kOpaque && type->opaque == "none") return ir::Attr::None();
    return ir::Attr::TypeValue(*std::move(type));
  }
  return Error("expected an attribute");
}

StatusOr<std::vector<int64_t>> Parser::ParseIntListBrackets() {
  KILN_RETURN_IF_ERROR(Expect('[', "to open a list of integers"));
  std::vector<int64_t> out;
  if (Consume(']')) return out;
  do {
    if (Consume('?')) {
      out.push_back(ir::kDynamicDim);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(int64_t v, ParseInt("an integer"));
    out.push_back(v);
    if (out.size() > (uint64_t{1} << 24)) return Error("list is too long");
  } while (Consume(','));
  KILN_RETURN_IF_ERROR(Expect(']', "to close a list of integers"));
  return out;
}

StatusOr<ir::Attr> Parser::ParseStructuredBody(std::string_view what) {
  KILN_RETURN_IF_ERROR(Expect('<', "after " + std::string(what)));
  std::vector<std::pair<std::string, ir::Attr>> fields;
  if (!Consume('>')) {
    do {
      KILN_ASSIGN_OR_RETURN(std::string key, ParseBareId("a field name of " + std::string(what)));
      KILN_RETURN_IF_ERROR(Expect('=', "after field '" + key + "'"));
      ir::Attr value;
      if (Peek() == '[') {
        const size_t save = pos_;
        StatusOr<std::vector<int64_t>> ints = ParseIntListBrackets();
        if (ints.ok()) {
          value = ir::Attr::IntArray(*ints);
        } else {
          pos_ = save;
          KILN_ASSIGN_OR_RETURN(value, ParseAttr());
        }
      } else {
        KILN_ASSIGN_OR_RETURN(value, ParseAttr());
      }
      fields.emplace_back(std::move(key), std::move(value));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect('>', "to close " + std::string(what)));
  }
  return ir::Attr::Dict(std::move(fields));
}

StatusOr<ir::Attr> Parser::ParseHashAttr() {
  const size_t start = pos_;
  KILN_RETURN_IF_ERROR(Expect('#', "before an attribute"));
  const size_t name_start = pos_;
  while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                 text_[pos_] == '_' || text_[pos_] == '.' || text_[pos_] == '$')) {
    ++pos_;
  }
  const std::string name(text_.substr(name_start, pos_ - name_start));
  const size_t dot = name.find('.');
  const std::string dialect = name.substr(0, dot);
  if (dialect == "stablehlo" || dialect == "sdy" || dialect == "mhlo" || dialect == "chlo") {
    std::string mnemonic = dot == std::string::npos ? "" : name.substr(dot + 1);
    if (mnemonic.empty()) {  // `#stablehlo<precision DEFAULT>`: the older pretty alias form
      KILN_RETURN_IF_ERROR(Expect('<', "after #" + dialect));
      KILN_ASSIGN_OR_RETURN(mnemonic, ParseBareId("an attribute kind"));
      if (dialect == "sdy" && Peek() == '{') {  // `#sdy<manual_axes{"x"}>`, MLIR's generic print
        KILN_ASSIGN_OR_RETURN(ir::Attr attr, ParseSdyAttr(mnemonic));
        KILN_RETURN_IF_ERROR(Expect('>', "to close #sdy<...>"));
        return attr;
      }
      KILN_ASSIGN_OR_RETURN(std::string value, ParseBareId("an enum value"));
      KILN_RETURN_IF_ERROR(Expect('>', "to close #" + dialect + "<...>"));
      return ir::Attr::Enum(std::move(value));
    }
    if (dialect == "stablehlo") return ParseStablehloAttr(mnemonic);
    if (dialect == "sdy") return ParseSdyAttr(mnemonic);
    // mhlo / chlo attributes Kiln does not interpret: kept opaque (balanced <...>).
    if (Peek() == '<') KILN_RETURN_IF_ERROR(SkipBalanced('<', '>'));
    return ir::Attr::Opaque(std::string(text_.substr(start, pos_ - start)));
  }
  if (dot != std::string::npos) return ErrorAt(start, "unknown attribute #" + name);
  auto alias = attr_aliases_.find(name);
  if (alias == attr_aliases_.end()) return ErrorAt(start, "undefined attribute alias #" + name);
  if (std::find(alias_stack_.begin(), alias_stack_.end(), "#" + name) != alias_stack_.end()) {
    return ErrorAt(start, "attribute alias #" + name + " refers to itself");
  }
  alias_stack_.push_back("#" + name);
  const size_t saved = pos_;
  pos_ = alias->second;
  StatusOr<ir::Attr> value = ParseAttr();
  pos_ = saved;
  alias_stack_.pop_back();
  return value;
}

}  // namespace kiln::ingest::text
