// PrintModule: a textual dump in MLIR's generic-op style, e.g.
//
//   module @jit_add attributes {mhlo.num_partitions = 1 : i32} {
//     func.func public @main(%0: tensor<i32>, %1: tensor<i32>) -> (tensor<i32>) {
//       %2 = "stablehlo.add"(%0, %1) : (tensor<i32>, tensor<i32>) -> tensor<i32>  // f.py:3:7
//       (jit(f)/add) "func.return"(%2) : (tensor<i32>) -> ()
//     }
//   }
//
// Values print by their module-wide ids. Foreign ops are marked `[foreign]`.
#include <string>

#include "ir/module.h"

namespace kiln::ir {
namespace {

class Printer {
 public:
  explicit Printer(const Module& module) : module_(module) {}

  std::string Print() {
    out_ += "// producer " + module_.producer + "\n";
    out_ += "module";
    if (!module_.name.empty()) out_ += " @" + module_.name;
    if (!module_.attrs.empty()) out_ += " attributes " + AttrDict(module_.attrs, {});
    out_ += " {\n";
    for (const Op& op : module_.other_ops) PrintOp(op, 1);
    for (const Function& fn : module_.functions) PrintFunction(fn);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  void Indent(int level) { out_.append(static_cast<size_t>(level) * 2, ' '); }

  std::string Value(ValueId v) const { return "%" + std::to_string(v); }

  std::string TypeOf(ValueId v) const {
    return module_.valid_value(v) ? module_.type_of(v).ToString() : "<invalid value>";
  }

  static std::string AttrDict(const std::vector<NamedAttr>& a, const std::vector<NamedAttr>& b) {
    std::string s = "{";
    bool first = true;
    for (const std::vector<NamedAttr>* list : {&a, &b}) {
      for (const NamedAttr& attr : *list) {
        s += (first ? "" : ", ") + attr.name + " = " + attr.value.ToString();
        first = false;
      }
    }
    return s + "}";
  }

  void PrintFunction(const Function& fn) {
    Indent(1);
    out_ += "func.func " + fn.visibility + " @" + fn.name + "(";
    const Block* entry = fn.body.blocks.empty() ? nullptr : &fn.body.blocks[0];
    for (size_t i = 0; i < fn.arg_types.size(); ++i) {
      out_ += i ? ", " : "";
      if (entry != nullptr && i < entry->args.size()) out_ += Value(entry->args[i]) + ": ";
      out_ += fn.arg_types[i].ToString();
      if (i < fn.arg_attrs.size() && !fn.arg_attrs[i].is_none() &&
          !(fn.arg_attrs[i].kind == Attr::Kind::kDict && fn.arg_attrs[i].dict.empty())) {
        out_ += " " + fn.arg_attrs[i].ToString();
      }
    }
    out_ += ") -> (";
    for (size_t i = 0; i < fn.result_types.size(); ++i) {
      out_ += (i ? ", " : "") + fn.result_types[i].ToString();
      if (i < fn.result_attrs.size() && !fn.result_attrs[i].is_none() &&
          !(fn.result_attrs[i].kind == Attr::Kind::kDict && fn.result_attrs[i].dict.empty())) {
        out_ += " " + fn.result_attrs[i].ToString();
      }
    }
    out_ += ") {";
    if (fn.loc >= 0) out_ += "  // " + std::string(module_.location(fn.loc));
    out_ += "\n";
    // The entry block's arguments are printed in the signature.
    for (size_t b = 0; b < fn.body.blocks.size(); ++b) PrintBlock(fn.body.blocks[b], 2, b > 0);
    Indent(1);
    out_ += "}\n";
  }

  void PrintBlock(const Block& block, int level, bool with_header) {
    if (with_header) {
      Indent(level - 1);
      out_ += "^bb(";
      for (size_t i = 0; i < block.args.size(); ++i) {
        out_ += (i ? ", " : "") + Value(block.args[i]) + ": " + TypeOf(block.args[i]);
      }
      out_ += "):\n";
    }
    for (const Op& op : block.ops) PrintOp(op, level);
  }

  void PrintOp(const Op& op, int level) {
    Indent(level);
    for (size_t i = 0; i < op.results.size(); ++i) out_ += (i ? ", " : "") + Value(op.results[i]);
    if (!op.results.empty()) out_ += " = ";
    out_ += "\"" + op.name + "\"(";
    for (size_t i = 0; i < op.operands.size(); ++i) out_ += (i ? ", " : "") + Value(op.operands[i]);
    out_ += ")";
    if (!op.attrs.empty() || !op.discardable.empty())
      out_ += " " + AttrDict(op.attrs, op.discardable);
    if (!op.regions.empty()) {
      out_ += " (";
      for (size_t r = 0; r < op.regions.size(); ++r) {
        out_ += r ? ", {\n" : "{\n";
        const Region& region = op.regions[r];
        for (size_t b = 0; b < region.blocks.size(); ++b) {
          PrintBlock(region.blocks[b], level + 1, b > 0 || !region.blocks[b].args.empty());
        }
        Indent(level);
        out_ += "}";
      }
      out_ += ")";
    }
    out_ += " : (";
    for (size_t i = 0; i < op.operands.size(); ++i)
      out_ += (i ? ", " : "") + TypeOf(op.operands[i]);
    out_ += ") -> ";
    if (op.results.size() == 1) {
      out_ += TypeOf(op.results[0]);
    } else {
      out_ += "(";
      for (size_t i = 0; i < op.results.size(); ++i)
        out_ += (i ? ", " : "") + TypeOf(op.results[i]);
      out_ += ")";
    }
    if (op.foreign) out_ += "  [foreign]";
    if (op.loc >= 0) out_ += "  // " + std::string(module_.location(op.loc));
    out_ += "\n";
  }

  const Module& module_;
  std::string out_;
};

}  // namespace

std::string PrintModule(const Module& module) { return Printer(module).Print(); }

}  // namespace kiln::ir
