// The custom forms with regions (stablehlo.reduce, stablehlo.while), func.call, and the forms of
// the chlo and sdy ops JAX prints; Parser::ParsePrettyOp, which picks the form.
#include <cctype>
#include <string>
#include <unordered_map>

#include "ingest/text_pretty_ops.h"

namespace kiln::ingest::text {

Status PrettyOps::Reduce() {
  // (%in init: %init), ... [applies op] across dimensions = [...] [{attrs}] : functype
  //   [reducer(%a: T, %b: T) ... { body }]
  std::vector<ir::ValueId> inputs, inits;
  do {
    KILN_RETURN_IF_ERROR(p_.Expect('(', "to open a reduce operand"));
    KILN_ASSIGN_OR_RETURN(ir::ValueId in, p_.ParseValueUse());
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("init"));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "after 'init'"));
    KILN_ASSIGN_OR_RETURN(ir::ValueId init, p_.ParseValueUse());
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close a reduce operand"));
    inputs.push_back(in);
    inits.push_back(init);
  } while (p_.Consume(','));
  op_.operands = inputs;
  op_.operands.insert(op_.operands.end(), inits.begin(), inits.end());
  std::string applies;
  if (p_.ConsumeKeyword("applies")) {
    if (p_.Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(applies, p_.ParseStringLiteral());
    } else {
      KILN_ASSIGN_OR_RETURN(applies, p_.ParseBareId("the reducing operation"));
    }
  }
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("across"));
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("dimensions"));
  KILN_RETURN_IF_ERROR(p_.Expect('=', "after 'dimensions'"));
  KILN_ASSIGN_OR_RETURN(ir::Attr dims, IntListAttr());
  props_.push_back({"dimensions", std::move(dims)});
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of stablehlo.reduce"));
  std::vector<ir::Type> in_types;
  KILN_RETURN_IF_ERROR(p_.ParseFunctionType(in_types, results_));
  if (in_types.size() != op_.operands.size()) {
    return p_.Error("stablehlo.reduce has " + std::to_string(op_.operands.size()) +
                    " operands but " + std::to_string(in_types.size()) + " operand types");
  }
  ir::Region& region = op_.regions.emplace_back();
  if (!applies.empty()) {
    const ir::Module& m = *p_.module_;
    const ir::Type scalar = ir::Type::Tensor(m.type_of(inputs[0]).dtype, {});
    ir::Block& block = region.blocks.emplace_back();
    const ir::ValueId lhs = p_.module_->AddValue(scalar);
    const ir::ValueId rhs = p_.module_->AddValue(scalar);
    block.args = {lhs, rhs};
    ir::Op inner;
    inner.name = applies;
    inner.operands = {lhs, rhs};
    inner.results = {p_.module_->AddValue(scalar)};
    KILN_RETURN_IF_ERROR(ToVhloForm(inner, {}, {}, *p_.module_));
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = inner.results;
    block.ops.push_back(std::move(inner));
    block.ops.push_back(std::move(ret));
    p_.synthesized_body_ = true;
  } else {
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("reducer"));
    std::vector<std::pair<std::string, ir::Type>> firsts, seconds;
    while (p_.Peek() == '(') {
      std::vector<std::pair<std::string, ir::Type>> pair;
      KILN_RETURN_IF_ERROR(p_.ParseBlockArgList(pair));
      if (pair.size() != 2) return p_.Error("reducer arguments come in pairs");
      firsts.push_back(std::move(pair[0]));
      seconds.push_back(std::move(pair[1]));
    }
    firsts.insert(firsts.end(), seconds.begin(), seconds.end());
    KILN_RETURN_IF_ERROR(p_.ParseRegion(region, "stablehlo.reduce", depth_ + 1, &firsts));
  }
  return Finish(std::move(dict));
}

Status PrettyOps::While() {
  KILN_RETURN_IF_ERROR(p_.Expect('(', "after stablehlo.while"));
  std::vector<std::string> names;
  if (!p_.Consume(')')) {
    do {
      KILN_RETURN_IF_ERROR(p_.Expect('%', "before a loop variable"));
      KILN_ASSIGN_OR_RETURN(std::string name, p_.ParseBareId("a loop variable name"));
      KILN_RETURN_IF_ERROR(p_.Expect('=', "after a loop variable"));
      KILN_ASSIGN_OR_RETURN(ir::ValueId init, p_.ParseValueUse());
      names.push_back(std::move(name));
      op_.operands.push_back(init);
    } while (p_.Consume(','));
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the loop variables"));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "before the loop variables' types"));
    do {
      KILN_ASSIGN_OR_RETURN(ir::Type t, p_.ParseType());
      results_.push_back(std::move(t));
    } while (p_.Consume(','));
  }
  if (results_.size() != names.size()) {
    return p_.Error("stablehlo.while has " + std::to_string(names.size()) + " loop variables but " +
                    std::to_string(results_.size()) + " types");
  }
  AttrList dict;
  if (p_.ConsumeKeyword("attributes")) KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  std::vector<std::pair<std::string, ir::Type>> args;
  for (size_t i = 0; i < names.size(); ++i) args.emplace_back(names[i], results_[i]);
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("cond"));
  KILN_RETURN_IF_ERROR(
      p_.ParseRegion(op_.regions.emplace_back(), "stablehlo.while", depth_ + 1, &args));
  KILN_RETURN_IF_ERROR(p_.ExpectKeyword("do"));
  KILN_RETURN_IF_ERROR(
      p_.ParseRegion(op_.regions.emplace_back(), "stablehlo.while", depth_ + 1, &args));
  return Finish(std::move(dict));
}

Status PrettyOps::Call() {
  KILN_ASSIGN_OR_RETURN(std::string callee, p_.ParseSymbolName());
  props_.push_back({"callee", ir::Attr::SymbolRef(std::move(callee))});
  KILN_RETURN_IF_ERROR(p_.Expect('(', "to open the call's arguments"));
  KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
  KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the call's arguments"));
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the call's type"));
  std::vector<ir::Type> inputs;
  KILN_RETURN_IF_ERROR(p_.ParseFunctionType(inputs, results_));
  return Finish(std::move(dict));
}

// CHLO ops (chlo.erf, chlo.top_k, ...): JAX's text keeps them, its bytecode path decomposes
// them into StableHLO. Read as foreign ops, so the compiler names them: `op %x [, %y] {attrs} :
// types [-> results]`, or `op(%x, k = 3) : type -> (types)`.
Status PrettyOps::Chlo() {
  const bool parenthesized = p_.Consume('(');
  KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
  while (p_.Consume(',')) {
    KILN_ASSIGN_OR_RETURN(std::string key, p_.ParseBareId("an attribute name"));
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after " + key));
    KILN_ASSIGN_OR_RETURN(ir::Attr value, p_.ParseAttr());
    props_.push_back({key, std::move(value)});
  }
  if (parenthesized) KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the operands"));
  AttrList dict;
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  for (ir::NamedAttr& a : props_) dict.push_back(std::move(a));
  props_.clear();
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the types of " + op_.name));
  std::vector<ir::Type> types;
  if (p_.Peek() == '(') {
    KILN_ASSIGN_OR_RETURN(types, p_.ParseTypeListParens());
  } else {
    do {
      KILN_ASSIGN_OR_RETURN(ir::Type t, p_.ParseType());
      types.push_back(std::move(t));
    } while (p_.Consume(','));
  }
  if (p_.ConsumeStr("->")) {
    KILN_ASSIGN_OR_RETURN(results_, p_.ParseResultTypes());
  } else if (!types.empty()) {
    results_ = {types.back()};
  }
  return Finish(std::move(dict));
}

// The Shardy ops JAX prints at the top of every module and around sharded values:
//   sdy.mesh @name = <["x"=2]> {attrs}
//   sdy.sharding_constraint %v <@mesh, [{"x"}, {}]> : type   (sdy.reshard alike)
Status PrettyOps::Sdy(std::string_view short_name) {
  AttrList dict;
  if (short_name == "return") {  // sdy.return %a, %b : ta, tb
    KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    if (!op_.operands.empty()) {
      KILN_RETURN_IF_ERROR(p_.Expect(':', "before the types of sdy.return"));
      do {
        KILN_RETURN_IF_ERROR(p_.ParseType().status());
      } while (p_.Consume(','));
    }
    return Finish(std::move(dict));
  }
  if (short_name == "manual_computation") {
    // (%operands) in_shardings=[<...>, ...] out_shardings=[...] manual_axes={"x"}
    //   (%arg: T, ...) { body } : (ins) -> outs
    KILN_RETURN_IF_ERROR(p_.Expect('(', "to open the operands of sdy.manual_computation"));
    KILN_ASSIGN_OR_RETURN(op_.operands, p_.ParseValueUseList());
    KILN_RETURN_IF_ERROR(p_.Expect(')', "to close the operands of sdy.manual_computation"));
    for (const char* key : {"in_shardings", "out_shardings"}) {
      KILN_RETURN_IF_ERROR(p_.ExpectKeyword(key));
      KILN_RETURN_IF_ERROR(p_.Expect('=', std::string("after ") + key));
      KILN_RETURN_IF_ERROR(p_.Expect('[', std::string("to open ") + key));
      std::vector<ir::Attr> shardings;
      if (!p_.Consume(']')) {
        do {
          KILN_ASSIGN_OR_RETURN(ir::Attr sharding, p_.ParseSdySharding());
          shardings.push_back(std::move(sharding));
        } while (p_.Consume(','));
        KILN_RETURN_IF_ERROR(p_.Expect(']', std::string("to close ") + key));
      }
      props_.push_back(
          {key, ir::Attr::Dict({{"sdy", ir::Attr::String("sharding_per_value")},
                                {"shardings", ir::Attr::Array(std::move(shardings))}})});
    }
    KILN_RETURN_IF_ERROR(p_.ExpectKeyword("manual_axes"));
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after manual_axes"));
    KILN_ASSIGN_OR_RETURN(ir::Attr axes, p_.ParseSdyAxisList());
    std::vector<ir::Attr> names;
    for (const ir::Attr& axis : axes.array) {
      const ir::Attr* name = axis.Find("name");
      if (name != nullptr) names.push_back(*name);
    }
    props_.push_back(
        {"manual_axes", ir::Attr::Dict({{"sdy", ir::Attr::String("manual_axes")},
                                        {"axes", ir::Attr::Array(std::move(names))}})});
    std::vector<std::pair<std::string, ir::Type>> args;
    KILN_RETURN_IF_ERROR(p_.ParseBlockArgList(args));
    KILN_RETURN_IF_ERROR(
        p_.ParseRegion(op_.regions.emplace_back(), "sdy.manual_computation", depth_ + 1, &args));
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of sdy.manual_computation"));
    std::vector<ir::Type> inputs;
    KILN_RETURN_IF_ERROR(p_.ParseFunctionType(inputs, results_));
    return Finish(std::move(dict));
  }
  if (short_name == "mesh") {
    KILN_ASSIGN_OR_RETURN(std::string name, p_.ParseSymbolName());
    KILN_RETURN_IF_ERROR(p_.Expect('=', "after the mesh name"));
    KILN_ASSIGN_OR_RETURN(ir::Attr mesh, p_.ParseSdyAttr("mesh"));
    props_.push_back({"mesh", std::move(mesh)});
    props_.push_back({"sym_name", ir::Attr::String(std::move(name))});
    if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
    return Finish(std::move(dict));
  }
  KILN_ASSIGN_OR_RETURN(ir::ValueId v, p_.ParseValueUse());
  op_.operands = {v};
  KILN_ASSIGN_OR_RETURN(ir::Attr sharding, p_.ParseSdySharding());
  props_.push_back({"sharding", std::move(sharding)});
  if (p_.Peek() == '{') KILN_RETURN_IF_ERROR(p_.ParseAttrDict(dict));
  KILN_RETURN_IF_ERROR(p_.Expect(':', "before the type of " + op_.name));
  KILN_ASSIGN_OR_RETURN(ir::Type type, p_.ParseType());
  results_ = {std::move(type)};
  return Finish(std::move(dict));
}

Status Parser::ParsePrettyOp(const std::string& name, ir::Op& op,
                             std::vector<ir::Type>& result_types, std::string_view parent,
                             int depth, bool& handled) {
  handled = true;
  PrettyOps pretty(*this, op, result_types, parent, depth);
  if (name == "call" || name == "func.call") {
    op.name = "func.call";
    return pretty.Call();
  }
  if (name == "return" || name == "func.return") {
    op.name = "func.return";
    return pretty.Common("return");
  }
  if (name == "sdy.mesh" || name == "sdy.sharding_constraint" || name == "sdy.reshard" ||
      name == "sdy.manual_computation" || name == "sdy.return") {
    op.name = name;
    return pretty.Sdy(std::string_view(name).substr(4));
  }
  if (name.rfind("chlo.", 0) == 0) {
    op.name = name;
    return pretty.Chlo();
  }
  if (name.rfind("stablehlo.", 0) != 0) {
    handled = false;
    return Status::Ok();
  }
  op.name = name;
  const std::string_view short_name = std::string_view(name).substr(10);
  if (short_name == "reduce") return pretty.Reduce();
  if (short_name == "while") return pretty.While();
  if (HasCommonForm(short_name)) return pretty.Common(short_name);
  handled = false;
  return Status::Ok();
}

}  // namespace kiln::ingest::text
