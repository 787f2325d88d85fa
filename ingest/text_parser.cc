// Blocks, regions, SSA values and ops (the generic form, and the dispatch to the custom forms).
#include "ingest/text_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kiln::ingest::text {

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
