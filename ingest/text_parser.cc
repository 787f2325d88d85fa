// Scanning, errors and the structural grammar: module, func.func, regions, blocks, generic ops.
#include "ingest/text_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kiln::ingest::text {
namespace {

bool IsIdStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '-';
}
bool IsValueIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '-';
}

}  // namespace

// ----------------------------------------------------------------------------------- scanning

void Parser::SkipSpace() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

bool Parser::AtEnd() {
  SkipSpace();
  return pos_ >= text_.size();
}

char Parser::Peek() {
  SkipSpace();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

char Parser::PeekAt(size_t ahead) {
  SkipSpace();
  return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
}

bool Parser::Consume(char c) {
  if (Peek() != c) return false;
  ++pos_;
  return true;
}

bool Parser::ConsumeStr(std::string_view s) {
  SkipSpace();
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

bool Parser::PeekKeyword(std::string_view keyword) {
  SkipSpace();
  if (text_.substr(pos_, keyword.size()) != keyword) return false;
  const size_t end = pos_ + keyword.size();
  return end >= text_.size() || !IsIdChar(text_[end]);
}

bool Parser::ConsumeKeyword(std::string_view keyword) {
  if (!PeekKeyword(keyword)) return false;
  pos_ += keyword.size();
  return true;
}

Status Parser::Expect(char c, std::string_view what) {
  if (Consume(c)) return Status::Ok();
  if (pos_ >= text_.size()) {
    return Error("expected '" + std::string(1, c) + "' " + std::string(what) +
                 ", found the end of the text");
  }
  return Error("expected '" + std::string(1, c) + "' " + std::string(what) + ", found '" +
               std::string(1, text_[pos_]) + "'");
}

Status Parser::ExpectKeyword(std::string_view keyword) {
  if (ConsumeKeyword(keyword)) return Status::Ok();
  return Error("expected '" + std::string(keyword) + "'");
}

std::string Parser::Where(size_t pos) const {
  pos = std::min(pos, text_.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "<text>:" + std::to_string(line) + ":" + std::to_string(column);
}

Status Parser::Positioned(Status status, size_t pos) const {
  if (status.ok() || status.message().rfind("<text>:", 0) == 0) return status;
  return Status(status.code(), Where(pos) + ": " + status.message());
}

Status Parser::ErrorAt(size_t pos, std::string message) const {
  return InvalidArgument(Where(pos) + ": " + message);
}

Status Parser::Enter() {
  if (++depth_ > limits_.max_nesting) {
    --depth_;
    return ResourceExhausted(Where(pos_) + ": attributes and types nest deeper than " +
                             std::to_string(limits_.max_nesting) + " levels");
  }
  return Status::Ok();
}

StatusOr<std::string> Parser::ParseBareId(std::string_view what) {
  SkipSpace();
  if (pos_ >= text_.size() || !IsIdStart(text_[pos_])) {
    return Error("expected " + std::string(what));
  }
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdChar(text_[pos_])) ++pos_;
  return std::string(text_.substr(start, pos_ - start));
}

StatusOr<std::string> Parser::ParseStringLiteral() {
  SkipSpace();
  if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a string literal");
  const size_t start = pos_++;
  std::string out;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') {
      return ErrorAt(start, "string literal is not terminated");
    }
    const char c = text_[pos_++];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size()) return ErrorAt(start, "string literal is not terminated");
    const char e = text_[pos_++];
    if (e == '"' || e == '\\') {
      out += e;
    } else if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (std::isxdigit(static_cast<unsigned char>(e)) && pos_ < text_.size() &&
               std::isxdigit(static_cast<unsigned char>(text_[pos_]))) {
      const char hex[3] = {e, text_[pos_++], 0};
      out += static_cast<char>(std::strtol(hex, nullptr, 16));
    } else {
      return ErrorAt(pos_ - 2, "unknown escape '\\" + std::string(1, e) + "' in string literal");
    }
  }
  return out;
}

StatusOr<std::string> Parser::ParseSymbolName() {
  KILN_RETURN_IF_ERROR(Expect('@', "before a symbol name"));
  if (pos_ < text_.size() && text_[pos_] == '"') return ParseStringLiteral();
  const size_t start = pos_;
  while (pos_ < text_.size() && IsIdChar(text_[pos_])) ++pos_;
  if (pos_ == start) return Error("expected a symbol name after '@'");
  return std::string(text_.substr(start, pos_ - start));
}

StatusOr<int64_t> Parser::ParseInt(std::string_view what) {
  SkipSpace();
  const size_t start = pos_;
  bool negative = false;
  if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) {
    negative = text_[pos_] == '-';
    ++pos_;
  }
  int base = 10;
  if (text_.substr(pos_, 2) == "0x") {
    base = 16;
    pos_ += 2;
  }
  const char* first = text_.data() + pos_;
  uint64_t magnitude = 0;
  auto [ptr, ec] = std::from_chars(first, text_.data() + text_.size(), magnitude, base);
  if (ptr == first) {
    pos_ = start;
    return Error("expected " + std::string(what));
  }
  if (ec != std::errc() ||
      magnitude > (negative ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX))) {
    return ErrorAt(start, std::string(what) + " is out of range");
  }
  pos_ += static_cast<size_t>(ptr - first);
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

StatusOr<double> Parser::ParseFloatValue() {
  SkipSpace();
  const size_t start = pos_;
  size_t end = pos_;
  if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
  while (end < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[end])) ||
                                text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E' ||
                                ((text_[end] == '-' || text_[end] == '+') &&
                                 (text_[end - 1] == 'e' || text_[end - 1] == 'E')))) {
    ++end;
  }
  const std::string token(text_.substr(start, end - start));
  if (token.empty()) return Error("expected a number");
  char* stop = nullptr;
  const double value = std::strtod(token.c_str(), &stop);
  if (stop != token.c_str() + token.size()) return Error("malformed number '" + token + "'");
  pos_ = end;
  return value;
}

// --------------------------------------------------------------------------------- structure

StatusOr<ir::Module> Parser::Parse() {
  ir::Module module;
  module.producer = "MLIR text";
  module.version_major = kCurrentReadableVersion.major;
  module.version_minor = kCurrentReadableVersion.minor;
  module.version_patch = kCurrentReadableVersion.patch;
  module_ = &module;
  KILN_RETURN_IF_ERROR(ScanAliases());
  KILN_RETURN_IF_ERROR(ParseTopLevel(module));
  if (module.functions.empty()) return Error("the program defines no function");
  return module;
}

Status Parser::ParseTopLevel(ir::Module& module) {
  bool seen_module = false;
  PushScope(true);
  while (!AtEnd()) {
    const char c = Peek();
    if (c == '#' || c == '!') {  // an alias definition: its value is parsed where it is used
      ++pos_;
      KILN_RETURN_IF_ERROR(ParseBareId("an alias name").status());
      KILN_RETURN_IF_ERROR(Expect('=', "in an alias definition"));
      if (c == '!') {
        KILN_RETURN_IF_ERROR(ParseType().status());
      } else {
        KILN_RETURN_IF_ERROR(ParseAttr().status());
      }
      continue;
    }
    if (ConsumeStr("{-#")) {
      return Error(
          "file metadata ({-# ... #-}, dialect resources) is not supported: print the program "
          "without elided or resource-backed constants");
    }
    if (PeekGenericName("builtin.module")) {
      if (seen_module || !module.functions.empty()) return Error("a second module");
      seen_module = true;
      KILN_RETURN_IF_ERROR(ParseGenericModule(module));
      continue;
    }
    if (PeekKeyword("module")) {
      if (seen_module || !module.functions.empty()) return Error("a second module");
      seen_module = true;
      pos_ += 6;
      if (Peek() == '@') {
        KILN_ASSIGN_OR_RETURN(module.name, ParseSymbolName());
      }
      if (ConsumeKeyword("attributes")) {
        AttrList attrs;
        KILN_RETURN_IF_ERROR(ParseAttrDict(attrs));
        for (ir::NamedAttr& a : attrs) {
          if (a.name == "sym_name" || a.name == "sym_visibility") continue;
          module.attrs.push_back(std::move(a));
        }
      }
      KILN_RETURN_IF_ERROR(Expect('{', "to open the module body"));
      KILN_RETURN_IF_ERROR(ParseModuleBody(module));
      KILN_RETURN_IF_ERROR(Expect('}', "to close the module body"));
      int32_t ignored = -1;
      KILN_RETURN_IF_ERROR(ParseTrailingLocation(ignored));
      continue;
    }
    if (seen_module) return Error("unexpected text after the module");
    // No `module` wrapper: MLIR wraps top-level functions in an implicit module.
    KILN_RETURN_IF_ERROR(ParseModuleBody(module));
    if (!AtEnd() && Peek() != '#' && Peek() != '!') return Error("unexpected '}'");
  }
  PopScope();
  std::stable_sort(module.attrs.begin(), module.attrs.end(),
                   [](const ir::NamedAttr& a, const ir::NamedAttr& b) { return a.name < b.name; });
  return Status::Ok();
}

Status Parser::ParseModuleBody(ir::Module& module) {
  while (!AtEnd() && Peek() != '}' && Peek() != '#' && Peek() != '!') {
    if (PeekKeyword("func.func")) {
      KILN_RETURN_IF_ERROR(ParseFunction(module, -1));
    } else if (PeekGenericName("func.func")) {
      KILN_RETURN_IF_ERROR(ParseGenericFunction(module));
    } else {
      KILN_RETURN_IF_ERROR(ParseOp(module.other_ops, "builtin.module", 1));
    }
  }
  return Status::Ok();
}

bool Parser::PeekGenericName(std::string_view name) {
  if (Peek() != '"') return false;
  return text_.substr(pos_ + 1, name.size() + 1) == std::string(name) + "\"";
}

Status Parser::ParseGenericModule(ir::Module& module) {
  KILN_RETURN_IF_ERROR(ParseStringLiteral().status());
  KILN_RETURN_IF_ERROR(Expect('(', "after \"builtin.module\""));
  KILN_RETURN_IF_ERROR(Expect(')', "(builtin.module has no operands)"));
  if (ConsumeStr("<{")) {
    --pos_;
    AttrList props;
    KILN_RETURN_IF_ERROR(ParseAttrDict(props));
    KILN_RETURN_IF_ERROR(Expect('>', "to close the module's properties"));
    for (ir::NamedAttr& a : props) {
      if (a.name == "sym_name" && a.value.kind == ir::Attr::Kind::kString)
        module.name = a.value.str;
    }
  }
  KILN_RETURN_IF_ERROR(Expect('(', "to open the module's region"));
  KILN_RETURN_IF_ERROR(Expect('{', "to open the module body"));
  KILN_RETURN_IF_ERROR(ParseModuleBody(module));
  KILN_RETURN_IF_ERROR(Expect('}', "to close the module body"));
  KILN_RETURN_IF_ERROR(Expect(')', "to close the module's region"));
  if (Peek() == '{') {
    AttrList attrs;
    KILN_RETURN_IF_ERROR(ParseAttrDict(attrs));
    for (ir::NamedAttr& a : attrs) {
      if (a.name == "sym_name" || a.name == "sym_visibility") continue;
      module.attrs.push_back(std::move(a));
    }
  }
  KILN_RETURN_IF_ERROR(Expect(':', "before the module's type"));
  std::vector<ir::Type> ins, outs;
  KILN_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  int32_t ignored = -1;
  return ParseTrailingLocation(ignored);
}

Status Parser::ParseGenericFunction(ir::Module& module) {
  const size_t start = pos_;
  KILN_RETURN_IF_ERROR(ParseStringLiteral().status());
  KILN_RETURN_IF_ERROR(Expect('(', "after \"func.func\""));
  KILN_RETURN_IF_ERROR(Expect(')', "(func.func has no operands)"));
  AttrList props;
  if (ConsumeStr("<{")) {
    --pos_;
    KILN_RETURN_IF_ERROR(ParseAttrDict(props));
    KILN_RETURN_IF_ERROR(Expect('>', "to close the function's properties"));
  }
  ir::Function fn;
  fn.visibility = "public";
  const ir::Attr* arg_attrs = nullptr;
  const ir::Attr* res_attrs = nullptr;
  bool has_type = false;
  for (const ir::NamedAttr& a : props) {
    if (a.name == "sym_name" && a.value.kind == ir::Attr::Kind::kString) fn.name = a.value.str;
    if (a.name == "sym_visibility" && a.value.kind == ir::Attr::Kind::kString) {
      fn.visibility = a.value.str;
    }
    if (a.name == "function_type" && a.value.kind == ir::Attr::Kind::kType &&
        a.value.str == "function" && a.value.type.elements.size() == 2) {
      fn.arg_types = a.value.type.elements[0].elements;
      fn.result_types = a.value.type.elements[1].elements;
      has_type = true;
    }
    if (a.name == "arg_attrs") arg_attrs = &a.value;
    if (a.name == "res_attrs") res_attrs = &a.value;
  }
  if (fn.name.empty() || !has_type) {
    return ErrorAt(start, "func.func needs sym_name and function_type properties");
  }
  auto per_value = [&](const ir::Attr* attrs, size_t count) -> StatusOr<std::vector<ir::Attr>> {
    std::vector<ir::Attr> out(count);
    if (attrs == nullptr || attrs->kind != ir::Attr::Kind::kArray || attrs->array.empty())
      return out;
    if (attrs->array.size() != count) {
      return ErrorAt(start, "arg_attrs/res_attrs of @" + fn.name + " do not match its type");
    }
    return attrs->array;
  };
  KILN_ASSIGN_OR_RETURN(fn.arg_attrs, per_value(arg_attrs, fn.arg_types.size()));
  KILN_ASSIGN_OR_RETURN(fn.result_attrs, per_value(res_attrs, fn.result_types.size()));
  KILN_RETURN_IF_ERROR(Expect('(', "to open the function's region"));
  PushScope(true);
  Status body = ParseRegion(fn.body, "func.func", 1, nullptr);
  PopScope();
  if (!body.ok())
    return Status(body.code(), std::string(body.message()) + " (in function @" + fn.name + ")");
  KILN_RETURN_IF_ERROR(Expect(')', "to close the function's region"));
  if (Peek() == '{') {
    AttrList ignored;
    KILN_RETURN_IF_ERROR(ParseAttrDict(ignored));
  }
  KILN_RETURN_IF_ERROR(Expect(':', "before the function op's type"));
  std::vector<ir::Type> ins, outs;
  KILN_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  KILN_RETURN_IF_ERROR(ParseTrailingLocation(fn.loc));
  if (fn.body.blocks.empty() || fn.body.blocks[0].args.size() != fn.arg_types.size()) {
    return ErrorAt(start, "the body of @" + fn.name + " does not take its arguments");
  }
  for (size_t i = 0; i < fn.arg_types.size(); ++i) {
    if (!(module_->type_of(fn.body.blocks[0].args[i]) == fn.arg_types[i])) {
      return ErrorAt(start, "argument " + std::to_string(i) + " of @" + fn.name +
                                " does not have the type its function_type gives");
    }
  }
  if (module.FindFunction(fn.name) != nullptr) {
    return ErrorAt(start, "redefinition of function @" + fn.name);
  }
  module.functions.push_back(std::move(fn));
  return Status::Ok();
}

Status Parser::ParseFunction(ir::Module& module, int32_t) {
  const size_t start = pos_;
  KILN_RETURN_IF_ERROR(ExpectKeyword("func.func"));
  ir::Function fn;
  fn.visibility = "public";
  if (ConsumeKeyword("public")) {
  } else if (ConsumeKeyword("private")) {
    fn.visibility = "private";
  } else if (ConsumeKeyword("nested")) {
    fn.visibility = "nested";
  }
  KILN_ASSIGN_OR_RETURN(fn.name, ParseSymbolName());
  KILN_RETURN_IF_ERROR(Expect('(', "to open the argument list of @" + fn.name));
  std::vector<std::pair<std::string, ir::Type>> args;
  bool any_arg_attrs = false;
  std::vector<ir::Attr> arg_attrs;
  if (!Consume(')')) {
    do {
      if (Peek() != '%') return Error("expected an argument name such as '%arg0'");
      ++pos_;
      const size_t name_start = pos_;
      while (pos_ < text_.size() && IsValueIdChar(text_[pos_])) ++pos_;
      std::string name(text_.substr(name_start, pos_ - name_start));
      KILN_RETURN_IF_ERROR(Expect(':', "after argument %" + name));
      KILN_ASSIGN_OR_RETURN(ir::Type type, ParseType());
      ir::Attr attrs = ir::Attr::Dict({});
      if (Peek() == '{') {
        AttrList list;
        KILN_RETURN_IF_ERROR(ParseAttrDict(list));
        std::stable_sort(list.begin(), list.end(),
                         [](const auto& a, const auto& b) { return a.name < b.name; });
        for (ir::NamedAttr& a : list) attrs.dict.emplace_back(a.name, std::move(a.value));
        any_arg_attrs = any_arg_attrs || !attrs.dict.empty();
      }
      int32_t ignored = -1;
      KILN_RETURN_IF_ERROR(ParseTrailingLocation(ignored));
      args.emplace_back(std::move(name), std::move(type));
      arg_attrs.push_back(std::move(attrs));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect(')', "to close the argument list of @" + fn.name));
  }
  bool any_result_attrs = false;
  std::vector<ir::Attr> result_attrs;
  if (ConsumeStr("->")) {
    const bool parenthesized = Consume('(');
    if (!parenthesized || Peek() != ')') {
      do {
        KILN_ASSIGN_OR_RETURN(ir::Type type, ParseType());
        fn.result_types.push_back(std::move(type));
        ir::Attr attrs = ir::Attr::Dict({});
        if (parenthesized && Peek() == '{') {
          AttrList list;
          KILN_RETURN_IF_ERROR(ParseAttrDict(list));
          std::stable_sort(list.begin(), list.end(),
                           [](const auto& a, const auto& b) { return a.name < b.name; });
          for (ir::NamedAttr& a : list) attrs.dict.emplace_back(a.name, std::move(a.value));
          any_result_attrs = any_result_attrs || !attrs.dict.empty();
        }
        result_attrs.push_back(std::move(attrs));
      } while (parenthesized && Consume(','));
    }
    if (parenthesized) KILN_RETURN_IF_ERROR(Expect(')', "to close the result list of @" + fn.name));
  }
  if (ConsumeKeyword("attributes")) {
    AttrList ignored;
    KILN_RETURN_IF_ERROR(ParseAttrDict(ignored));
  }
  for (const auto& [name, type] : args) fn.arg_types.push_back(type);
  fn.arg_attrs = any_arg_attrs ? std::move(arg_attrs) : std::vector<ir::Attr>(args.size());
  fn.result_attrs =
      any_result_attrs ? std::move(result_attrs) : std::vector<ir::Attr>(fn.result_types.size());
  if (Peek() != '{') return Error("function @" + fn.name + " has no body");
  PushScope(true);
  Status body = ParseRegion(fn.body, "func.func", 1, &args);
  PopScope();
  if (!body.ok())
    return Status(body.code(), std::string(body.message()) + " (in function @" + fn.name + ")");
  KILN_RETURN_IF_ERROR(ParseTrailingLocation(fn.loc));
  if (module.FindFunction(fn.name) != nullptr) {
    return ErrorAt(start, "redefinition of function @" + fn.name);
  }
  module.functions.push_back(std::move(fn));
  return Status::Ok();
}

Status Parser::ParseBlockArgList(std::vector<std::pair<std::string, ir::Type>>& args) {
  KILN_RETURN_IF_ERROR(Expect('(', "to open a block argument list"));
  if (Consume(')')) return Status::Ok();
  do {
    if (Peek() != '%') return Error("expected a block argument name");
    ++pos_;
    const size_t name_start = pos_;
    while (pos_ < text_.size() && IsValueIdChar(text_[pos_])) ++pos_;
    std::string name(text_.substr(name_start, pos_ - name_start));
    KILN_RETURN_IF_ERROR(Expect(':', "after block argument %" + name));
    KILN_ASSIGN_OR_RETURN(ir::Type type, ParseType());
    int32_t ignored = -1;
    KILN_RETURN_IF_ERROR(ParseTrailingLocation(ignored));
    args.emplace_back(std::move(name), std::move(type));
  } while (Consume(','));
  return Expect(')', "to close a block argument list");
}

Status Parser::ParseRegion(ir::Region& region, std::string_view parent, int depth,
                           const std::vector<std::pair<std::string, ir::Type>>* entry_args) {
  if (depth > ir::kMaxNestingDepth) {
    return ResourceExhausted(Where(pos_) + ": regions nest more than " +
                             std::to_string(ir::kMaxNestingDepth) + " levels deep");
  }
  KILN_RETURN_IF_ERROR(Expect('{', "to open a region"));
  PushScope(false);
  ir::Block& block = region.blocks.emplace_back();
  std::vector<std::pair<std::string, ir::Type>> label_args;
  if (Peek() == '^') {
    ++pos_;
    KILN_RETURN_IF_ERROR(ParseBareId("a block label").status());
    if (Peek() == '(') KILN_RETURN_IF_ERROR(ParseBlockArgList(label_args));
    KILN_RETURN_IF_ERROR(Expect(':', "after the block label"));
    if (entry_args != nullptr && !entry_args->empty()) {
      PopScope();
      return Error("a block label and arguments given before the region");
    }
    entry_args = &label_args;
  }
  if (entry_args != nullptr) {
    for (const auto& [name, type] : *entry_args) {
      const ir::ValueId id = module_->AddValue(type);
      block.args.push_back(id);
      Status defined = DefineValue(name, {id}, pos_);
      if (!defined.ok()) {
        PopScope();
        return defined;
      }
    }
  }
  Status body = ParseBlockBody(block, parent, depth);
  PopScope();
  KILN_RETURN_IF_ERROR(body);
  if (Peek() == '^') return Error("regions of more than one block are not supported");
  return Expect('}', "to close a region");
}

Status Parser::ParseBlockBody(ir::Block& block, std::string_view parent, int depth) {
  while (true) {
    const char c = Peek();
    if (c == '}' || c == '^' || c == '\0') return Status::Ok();
    KILN_RETURN_IF_ERROR(ParseOp(block.ops, parent, depth));
  }
}

Status Parser::DefineValue(const std::string& name, std::vector<ir::ValueId> ids, size_t pos) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (it->values.count(name) != 0) return ErrorAt(pos, "redefinition of value %" + name);
    if (it->isolated) break;
  }
  scopes_.back().values[name] = ValueDef{std::move(ids)};
  return Status::Ok();
}

const Parser::ValueDef* Parser::Lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->values.find(name);
    if (found != it->values.end()) return &found->second;
    if (it->isolated) break;
  }
  return nullptr;
}

StatusOr<ir::ValueId> Parser::ParseValueUse() {
  const size_t start = pos_;
  KILN_RETURN_IF_ERROR(Expect('%', "before a value name"));
  const size_t name_start = pos_;
  while (pos_ < text_.size() && IsValueIdChar(text_[pos_])) ++pos_;
  if (pos_ == name_start) return ErrorAt(start, "expected a value name after '%'");
  const std::string name(text_.substr(name_start, pos_ - name_start));
  int64_t index = 0;
  if (pos_ < text_.size() && text_[pos_] == '#') {
    ++pos_;
    KILN_ASSIGN_OR_RETURN(index, ParseInt("a result number"));
  }
  const ValueDef* def = Lookup(name);
  if (def == nullptr) return ErrorAt(start, "use of undefined value %" + name);
  if (index < 0 || static_cast<size_t>(index) >= def->ids.size()) {
    return ErrorAt(start, "%" + name + " has " + std::to_string(def->ids.size()) + " result(s); #" +
                              std::to_string(index) + " does not exist");
  }
  return def->ids[static_cast<size_t>(index)];
}

StatusOr<std::vector<ir::ValueId>> Parser::ParseValueUseList() {
  std::vector<ir::ValueId> out;
  if (Peek() != '%') return out;
  while (true) {
    KILN_ASSIGN_OR_RETURN(ir::ValueId v, ParseValueUse());
    out.push_back(v);
    const size_t before = pos_;
    if (!Consume(',')) break;
    if (Peek() != '%') {  // a keyword follows (`dims = ...`): leave the comma to the caller
      pos_ = before;
      break;
    }
  }
  return out;
}

Status Parser::ParseTrailingLocation(int32_t& loc) {
  if (!PeekKeyword("loc")) return Status::Ok();
  pos_ += 3;
  KILN_RETURN_IF_ERROR(Expect('(', "after 'loc'"));
  LocInfo info;
  KILN_RETURN_IF_ERROR(ParseLocationBody(info, 0));
  KILN_RETURN_IF_ERROR(Expect(')', "to close the location"));
  loc = InternLocation(info);
  return Status::Ok();
}

Status Parser::ParseOp(std::vector<ir::Op>& out, std::string_view parent, int depth) {
  SkipSpace();
  const size_t start = pos_;
  std::vector<PendingResult> results;
  size_t total = 0;
  if (Peek() == '%') {
    do {
      PendingResult r;
      r.pos = pos_;
      KILN_RETURN_IF_ERROR(Expect('%', "before a result name"));
      const size_t name_start = pos_;
      while (pos_ < text_.size() && IsValueIdChar(text_[pos_])) ++pos_;
      if (pos_ == name_start) return Error("expected a result name after '%'");
      r.name = std::string(text_.substr(name_start, pos_ - name_start));
      if (pos_ < text_.size() && text_[pos_] == ':') {
        ++pos_;
        KILN_ASSIGN_OR_RETURN(int64_t count, ParseInt("a result count"));
        if (count < 1 || count > 1000000) return Error("result count out of range");
        r.count = static_cast<size_t>(count);
      }
      total += r.count;
      results.push_back(std::move(r));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect('=', "after the result names"));
  }
  // Results are numbered before the op's regions, as the bytecode reader numbers them.
  std::vector<ir::ValueId> ids;
  for (size_t i = 0; i < total; ++i) ids.push_back(module_->AddValue(ir::Type()));

  ir::Op op;
  std::vector<ir::Type> result_types;
  SkipSpace();
  const size_t name_pos = pos_;
  if (Peek() == '"') {
    KILN_ASSIGN_OR_RETURN(op.name, ParseStringLiteral());
    KILN_RETURN_IF_ERROR(Positioned(ParseGenericOp(op, result_types, parent, depth), name_pos));
  } else {
    KILN_ASSIGN_OR_RETURN(std::string name, ParseBareId("an operation"));
    bool handled = false;
    KILN_RETURN_IF_ERROR(
        Positioned(ParsePrettyOp(name, op, result_types, parent, depth, handled), name_pos));
    if (!handled) {
      return ErrorAt(name_pos, "unknown operation '" + name +
                                   "' (custom form not known to Kiln; the generic form "
                                   "\"dialect.op\"(...) is read for any op)");
    }
  }
  KILN_RETURN_IF_ERROR(ParseTrailingLocation(op.loc));
  if (synthesized_body_) {
    synthesized_body_ = false;
    for (ir::Region& region : op.regions) {
      for (ir::Block& block : region.blocks) {
        for (ir::Op& inner : block.ops) inner.loc = op.loc;
      }
    }
  }
  if (op.name == "func.return" || op.name == "stablehlo.return") {
    op.name = parent == "func.func" ? "func.return" : "stablehlo.return";
  }
  if (result_types.size() != total) {
    return ErrorAt(start, op.name + " has " + std::to_string(result_types.size()) +
                              " result type(s) but " + std::to_string(total) + " result name(s)");
  }
  for (size_t i = 0; i < total; ++i)
    module_->value_types[static_cast<size_t>(ids[i])] = result_types[i];
  size_t next = 0;
  for (const PendingResult& r : results) {
    std::vector<ir::ValueId> slice(ids.begin() + static_cast<ptrdiff_t>(next),
                                   ids.begin() + static_cast<ptrdiff_t>(next + r.count));
    next += r.count;
    KILN_RETURN_IF_ERROR(DefineValue(r.name, std::move(slice), r.pos));
  }
  op.results = std::move(ids);
  out.push_back(std::move(op));
  return Status::Ok();
}

Status Parser::ParseGenericOp(ir::Op& op, std::vector<ir::Type>& result_types, std::string_view,
                              int depth) {
  KILN_RETURN_IF_ERROR(Expect('(', "to open the operand list of " + op.name));
  KILN_ASSIGN_OR_RETURN(op.operands, ParseValueUseList());
  KILN_RETURN_IF_ERROR(Expect(')', "to close the operand list of " + op.name));
  if (Peek() == '[') return Error("successor blocks are not supported (" + op.name + ")");
  AttrList props, dict;
  if (ConsumeStr("<{")) {
    --pos_;  // ParseAttrDict starts at '{'
    KILN_RETURN_IF_ERROR(ParseAttrDict(props));
    KILN_RETURN_IF_ERROR(Expect('>', "to close the properties of " + op.name));
  }
  if (Peek() == '(') {
    ++pos_;
    do {
      if (depth + 1 > ir::kMaxNestingDepth) {
        return ResourceExhausted(Where(pos_) + ": " + op.name + " nests regions more than " +
                                 std::to_string(ir::kMaxNestingDepth) + " levels deep");
      }
      KILN_RETURN_IF_ERROR(ParseRegion(op.regions.emplace_back(), op.name, depth + 1, nullptr));
    } while (Consume(','));
    KILN_RETURN_IF_ERROR(Expect(')', "to close the regions of " + op.name));
  }
  if (Peek() == '{') KILN_RETURN_IF_ERROR(ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(Expect(':', "before the type of " + op.name));
  std::vector<ir::Type> inputs;
  KILN_RETURN_IF_ERROR(ParseFunctionType(inputs, result_types));
  if (inputs.size() != op.operands.size()) {
    return Error(op.name + " has " + std::to_string(op.operands.size()) + " operand(s) but " +
                 std::to_string(inputs.size()) + " operand type(s)");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!(module_->type_of(op.operands[i]) == inputs[i])) {
      return Error(op.name + " operand #" + std::to_string(i) + " has type " +
                   module_->type_of(op.operands[i]).ToString() + ", not " + inputs[i].ToString());
    }
  }
  return ToVhloForm(op, std::move(props), std::move(dict), *module_);
}

}  // namespace kiln::ingest::text
