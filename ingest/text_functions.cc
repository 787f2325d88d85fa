// The module and its functions: `module @name attributes {...} { ... }`, `func.func`, and their
// generic forms ("builtin.module"() ({...}), "func.func"() <{...}> ({...})).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "ingest/text_parser.h"

namespace kiln::ingest::text {

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

}  // namespace kiln::ingest::text
