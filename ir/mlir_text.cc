// WriteMlirText (ir/mlir_text.h): module, functions, regions and ops. Ops print in MLIR's generic
// form, `%v3 = "stablehlo.add"(%v1, %v2) <{properties}> ({regions}) {attributes} : (...) -> ...`;
// func.func in its pretty form with argument and result attributes. Values are named by their
// module-wide ids (%v<id>). Regions nest as deep as the IR allows (ir::kMaxNestingDepth): the
// caller runs this on a large stack, as it runs the readers. Each op carries its location, as far
// as the IR keeps it (LocationText).
#include "ir/mlir_text.h"

#include <algorithm>

#include "ir/mlir_text_internal.h"

namespace kiln::ir {
namespace {

using mlir_text::AttrTexts;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A location string of Module::locations ("file:line:col (name)", "file:line", "name", ...) as an
// MLIR location: `loc("name"("file":line:col))`. Kiln's readers keep only these pieces of JAX's
// call-site chains, so the text has the user's frame and the op's name, which jaxlib turns into
// HLO metadata (source_file, source_line, op_name).
std::string LocationText(std::string_view s) {
  std::string_view head = s, name;
  if (const size_t open = s.find(" ("); open != std::string_view::npos && s.ends_with(")")) {
    head = s.substr(0, open);
    name = s.substr(open + 2, s.size() - open - 3);
  }
  std::string file;
  std::string_view line = "0", column = "0";
  const size_t last = head.rfind(':');
  if (last != std::string_view::npos && AllDigits(head.substr(last + 1))) {
    const size_t before = head.rfind(':', last - 1);
    if (last > 0 && before != std::string_view::npos &&
        AllDigits(head.substr(before + 1, last - before - 1))) {
      file = std::string(head.substr(0, before));
      line = head.substr(before + 1, last - before - 1);
      column = head.substr(last + 1);
    } else {
      file = std::string(head.substr(0, last));
      line = head.substr(last + 1);
    }
  } else if (name.empty()) {
    return "loc(" + mlir_text::Quote(head) + ")";  // a name alone (or a file without a line)
  } else {
    file = std::string(head);
  }
  std::string frame = mlir_text::Quote(file) + ":" + std::string(line) + ":" + std::string(column);
  if (name.empty()) return "loc(" + frame + ")";
  return "loc(" + mlir_text::Quote(name) + "(" + frame + "))";
}

class Writer {
 public:
  explicit Writer(const Module& module) : module_(module) {}

  StatusOr<std::string> Write() {
    out_ += "module";
    if (!module_.name.empty()) out_ += " " + mlir_text::Symbol(module_.name);
    if (!module_.attrs.empty()) {
      KILN_ASSIGN_OR_RETURN(std::string dict, mlir_text::DictOf(module_.attrs), "the module");
      out_ += " attributes " + dict;
    }
    out_ += " {\n";
    for (const Op& op : module_.other_ops) KILN_RETURN_IF_ERROR(WriteOp(op, 1));
    for (const Function& fn : module_.functions) {
      KILN_RETURN_IF_ERROR(WriteFunction(fn).WithContext("func.func @" + fn.name));
    }
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void Indent(int level) { out_.append(static_cast<size_t>(level) * 2, ' '); }

  // A type MLIR's parser reads as Kiln holds it: tensors of Kiln's element types, tokens and
  // tuples of them. Opaque types (quantized, unranked, ...) keep only a spelling: refused.
  static Status CheckType(const Type& t) {
    switch (t.kind) {
      case Type::Kind::kTensor:
        if (t.dtype == DType::kInvalid || t.dtype == DType::kS1 || t.dtype == DType::kToken ||
            !t.opaque.empty()) {
          return Unimplemented("Kiln's MLIR writer cannot print the type " + t.ToString());
        }
        return Status::Ok();
      case Type::Kind::kToken:
        return Status::Ok();
      case Type::Kind::kTuple:
        for (const Type& e : t.elements) KILN_RETURN_IF_ERROR(CheckType(e));
        return Status::Ok();
      case Type::Kind::kOpaque:
        break;
    }
    return Unimplemented("Kiln's MLIR writer cannot print the type " + t.ToString());
  }

  static StatusOr<std::string> TypeText(const Type& t) {
    KILN_RETURN_IF_ERROR(CheckType(t));
    return t.ToString();
  }

  static std::string Value(ValueId v) { return "%v" + std::to_string(v); }

  StatusOr<std::string> TypeOf(ValueId v) const {
    if (!module_.valid_value(v))
      return InvalidArgument("value %" + std::to_string(v) + " is not defined");
    return TypeText(module_.type_of(v));
  }

  static bool EmptyAttrs(const std::vector<Attr>& attrs, size_t i) {
    return i >= attrs.size() || attrs[i].is_none() ||
           (attrs[i].kind == Attr::Kind::kDict && attrs[i].dict.empty());
  }

  Status WriteFunction(const Function& fn) {
    if (fn.body.blocks.empty()) {
      return Unimplemented(
          "Kiln's MLIR writer cannot print a function declaration (a func.func without a body)");
    }
    if (fn.body.blocks.size() != 1) {
      return Unimplemented("Kiln's MLIR writer prints functions of one block, not " +
                           std::to_string(fn.body.blocks.size()));
    }
    const Block& entry = fn.body.blocks[0];
    if (entry.args.size() != fn.arg_types.size()) {
      return InvalidArgument("the function has " + std::to_string(fn.arg_types.size()) +
                             " argument types but " + std::to_string(entry.args.size()) +
                             " block arguments");
    }
    Indent(1);
    out_ += "func.func " + (fn.visibility.empty() ? std::string() : fn.visibility + " ") +
            mlir_text::Symbol(fn.name) + "(";
    for (size_t i = 0; i < fn.arg_types.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string type, TypeText(fn.arg_types[i]));
      out_ += (i ? ", " : "") + Value(entry.args[i]) + ": " + type;
      if (!EmptyAttrs(fn.arg_attrs, i)) {
        KILN_ASSIGN_OR_RETURN(std::string dict, mlir_text::Value(fn.arg_attrs[i]),
                              "argument " + std::to_string(i));
        out_ += " " + dict;
      }
    }
    out_ += ") -> (";
    for (size_t i = 0; i < fn.result_types.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string type, TypeText(fn.result_types[i]));
      out_ += (i ? ", " : "") + type;
      if (!EmptyAttrs(fn.result_attrs, i)) {
        KILN_ASSIGN_OR_RETURN(std::string dict, mlir_text::Value(fn.result_attrs[i]),
                              "result " + std::to_string(i));
        out_ += " " + dict;
      }
    }
    out_ += ") {\n";
    for (const Op& op : entry.ops) KILN_RETURN_IF_ERROR(WriteOp(op, 2));
    Indent(1);
    out_ += "}";
    if (fn.loc >= 0 && static_cast<size_t>(fn.loc) < module_.locations.size()) {
      out_ += " " + LocationText(module_.locations[static_cast<size_t>(fn.loc)]);
    }
    out_ += "\n";
    return Status::Ok();
  }

  static std::string Joined(const AttrTexts& attrs) {
    std::string out = "{";
    for (size_t i = 0; i < attrs.size(); ++i) {
      out += (i ? ", " : "") + mlir_text::Key(attrs[i].first);
      if (!attrs[i].second.empty()) out += " = " + attrs[i].second;
    }
    return out + "}";
  }

  Status WriteOp(const Op& op, int level) {
    AttrTexts properties, discardable;
    KILN_RETURN_IF_ERROR(mlir_text::OpAttributes(op, properties, discardable));
    Indent(level);
    for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + Value(op.results[i]);
    if (!op.results.empty()) out_ += " = ";
    out_ += mlir_text::Quote(op.name) + "(";
    for (size_t i = 0; i < op.operands.size(); ++i) out_ += (i ? ", " : "") + Value(op.operands[i]);
    out_ += ")";
    if (!properties.empty()) out_ += " <" + Joined(properties) + ">";
    if (!op.regions.empty()) {
      out_ += " (";
      for (size_t r = 0; r < op.regions.size(); ++r) {
        out_ += r ? ", {\n" : "{\n";
        const Region& region = op.regions[r];
        if (region.blocks.size() > 1) {
          return Unimplemented("Kiln's MLIR writer cannot print the " +
                               std::to_string(region.blocks.size()) + "-block region of " +
                               op.name);
        }
        for (const Block& block : region.blocks) {
          if (!block.args.empty()) {
            Indent(level);
            out_ += "^bb0(";
            for (size_t i = 0; i < block.args.size(); ++i) {
              KILN_ASSIGN_OR_RETURN(std::string type, TypeOf(block.args[i]));
              out_ += (i ? ", " : "") + Value(block.args[i]) + ": " + type;
            }
            out_ += "):\n";
          }
          for (const Op& inner : block.ops) KILN_RETURN_IF_ERROR(WriteOp(inner, level + 1));
        }
        Indent(level);
        out_ += "}";
      }
      out_ += ")";
    }
    if (!discardable.empty()) out_ += " " + Joined(discardable);
    out_ += " : (";
    for (size_t i = 0; i < op.operands.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string type, TypeOf(op.operands[i]));
      out_ += (i ? ", " : "") + type;
    }
    out_ += ") -> ";
    if (op.results.size() != 1) out_ += "(";
    for (size_t i = 0; i < op.results.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(std::string type, TypeOf(op.results[i]));
      out_ += (i ? ", " : "") + type;
    }
    if (op.results.size() != 1) out_ += ")";
    if (op.loc >= 0 && static_cast<size_t>(op.loc) < module_.locations.size()) {
      out_ += " " + LocationText(module_.locations[static_cast<size_t>(op.loc)]);
    }
    out_ += "\n";
    return Status::Ok();
  }

  const Module& module_;
  std::string out_;
};

}  // namespace

StatusOr<std::string> WriteMlirText(const Module& module) { return Writer(module).Write(); }

}  // namespace kiln::ir
