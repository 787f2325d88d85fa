// The structural half of the HLO writer (ingest/hlo_writer.h): @main becomes the entry
// computation, regions and called functions become computations, multi-result ops become tuples
// with get-tuple-element per result. Per-op translation is in ingest/hlo_writer_ops.cc.
#include "ingest/hlo_writer.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "ingest/hlo_writer_internal.h"

namespace kiln::ingest {
namespace hlo_writer {
namespace {

// HloComputation / HloModule nesting the reader accepts (hlo::kMaxComputationDepth).
constexpr int kMaxDepth = 64;

bool IsTerminator(const ir::Op& op) {
  return op.name == "stablehlo.return" || op.name == "func.return";
}

// "file.py:42:7 (jit(f)/add)", "file.py:42 (name)", "name": the reader's location forms.
void ParseLocation(std::string_view text, std::string& file, int64_t& line, std::string& name) {
  std::string_view where = text;
  if (text.ends_with(")")) {
    const size_t open = text.find(" (");
    if (open != std::string_view::npos) {
      name = std::string(text.substr(open + 2, text.size() - open - 3));
      where = text.substr(0, open);
    }
  }
  // FILE:LINE[:COL], FILE not empty and LINE digits.
  size_t colon = where.find(':');
  if (colon != std::string_view::npos && colon > 0) {
    std::string_view rest = where.substr(colon + 1);
    const size_t end = rest.find(':');
    std::string_view digits = rest.substr(0, end);
    if (!digits.empty() &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        digits.size() < 10) {
      file = std::string(where.substr(0, colon));
      line = std::stoll(std::string(digits));
      return;
    }
  }
  name = std::string(text);  // not a file position: the whole text is the op's name
}

}  // namespace

std::string Describe(const ir::Op& op) { return "op '" + op.name + "'"; }

Encoder Writer::Metadata(int32_t loc) const {
  Encoder metadata;
  if (loc < 0) return metadata;
  const std::string_view text = module_.location(loc);
  if (text.empty()) return metadata;
  std::string file, name;
  int64_t line = 0;
  ParseLocation(text, file, line, name);
  if (!name.empty()) metadata.Str(2, name);  // op_name
  if (!file.empty()) {
    metadata.Str(3, file);  // source_file
    metadata.Int(4, line);  // source_line
  }
  return metadata;
}

StatusOr<int64_t> Writer::Operand(Scope& scope, const ir::Op& op, ir::ValueId v) {
  auto it = scope.values.find(v);
  if (it == scope.values.end()) {
    if (auto c = constants_.find(v); c != constants_.end()) {
      KILN_RETURN_IF_ERROR(EmitOp(scope, *c->second, 0));
      return scope.values.at(v);
    }
    return Unimplemented(Describe(op) + " in computation '" + scope.name + "' uses %" +
                         std::to_string(v) +
                         ", a value of an enclosing region, which this op's HLO computation "
                         "cannot capture");
  }
  return it->second;
}

StatusOr<std::vector<int64_t>> Writer::Operands(Scope& scope, const ir::Op& op) {
  std::vector<int64_t> ids;
  for (ir::ValueId v : op.operands) {
    KILN_ASSIGN_OR_RETURN(int64_t id, Operand(scope, op, v));
    ids.push_back(id);
  }
  return ids;
}

int64_t Writer::Add(Scope& scope, std::string_view opcode, const Encoder& shape,
                    const std::vector<int64_t>& operands, const Encoder& fields, int32_t loc,
                    const std::vector<int64_t>& called) {
  const int64_t id = next_id_++;
  Encoder inst;
  inst.Str(1, std::string(opcode) + "." + std::to_string(id));  // name
  inst.Str(2, opcode);
  inst.Message(3, shape);
  const Encoder metadata = Metadata(loc);
  if (!metadata.empty()) inst.Message(7, metadata);
  inst.Int(35, id);
  inst.PackedInts(36, operands);
  inst.PackedInts(38, called);
  inst.Append(fields);
  scope.instructions.push_back(inst.Take());
  return id;
}

Status Writer::BindResults(Scope& scope, const ir::Op& op, int64_t id) {
  if (op.results.size() == 1) {
    scope.values[op.results[0]] = id;
    return Status::Ok();
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(module_.type_of(op.results[i])));
    Encoder index;
    index.Int(kTupleIndex, static_cast<int64_t>(i));
    scope.values[op.results[i]] = Add(scope, "get-tuple-element", shape, {id}, index, op.loc);
  }
  return Status::Ok();
}

Status Writer::AddWithResults(Scope& scope, const ir::Op& op, std::string_view opcode,
                              const std::vector<int64_t>& operands, const Encoder& fields,
                              const std::vector<int64_t>& called,
                              const std::vector<std::vector<int64_t>>* result_layouts) {
  std::vector<ir::Type> types;
  for (ir::ValueId v : op.results) types.push_back(module_.type_of(v));
  Encoder shape;
  if (result_layouts != nullptr) {
    if (result_layouts->size() != types.size()) {
      return InvalidArgument(Describe(op) + " has " + std::to_string(result_layouts->size()) +
                             " result layouts for " + std::to_string(types.size()) + " results");
    }
    std::vector<Encoder> parts;
    for (size_t i = 0; i < types.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Encoder part, ShapeOf(types[i], &(*result_layouts)[i]));
      parts.push_back(std::move(part));
    }
    if (parts.size() == 1) {
      shape = std::move(parts[0]);
    } else {
      shape.Int(2, 13);  // TUPLE
      for (const Encoder& part : parts) shape.Message(4, part);
    }
  } else {
    KILN_ASSIGN_OR_RETURN(shape, ShapeOfAll(types), Describe(op));
  }
  const int64_t id = Add(scope, opcode, shape, operands, fields, op.loc, called);
  return BindResults(scope, op, id);
}

StatusOr<const ir::Block*> Writer::RegionBlock(const ir::Op& op, size_t index) const {
  if (op.regions.size() <= index) {
    return InvalidArgument(Describe(op) + " has " + std::to_string(op.regions.size()) +
                           " regions; expected at least " + std::to_string(index + 1));
  }
  const ir::Region& region = op.regions[index];
  if (region.blocks.size() != 1) {
    return Unimplemented(Describe(op) + " has a region of " + std::to_string(region.blocks.size()) +
                         " blocks; HLO computations are one block");
  }
  return &region.blocks[0];
}

std::vector<ir::ValueId> Writer::FreeValues(const ir::Region& region) const {
  std::unordered_set<ir::ValueId> defined, seen;
  std::vector<ir::ValueId> free;
  // Definitions first (ops use only values defined before them or outside), then uses.
  std::vector<const ir::Region*> pending = {&region};
  std::vector<const ir::Op*> ops;
  while (!pending.empty()) {
    const ir::Region* r = pending.back();
    pending.pop_back();
    for (const ir::Block& block : r->blocks) {
      defined.insert(block.args.begin(), block.args.end());
      for (const ir::Op& op : block.ops) {
        defined.insert(op.results.begin(), op.results.end());
        ops.push_back(&op);
        for (const ir::Region& inner : op.regions) pending.push_back(&inner);
      }
    }
  }
  // `ops` is in a walk order; sort uses by value id for a deterministic parameter order.
  for (const ir::Op* op : ops) {
    for (ir::ValueId v : op->operands) {
      if (!defined.contains(v) && seen.insert(v).second) free.push_back(v);
    }
  }
  std::sort(free.begin(), free.end());
  return free;
}

Status Writer::EmitBlock(Scope& scope, const ir::Block& block, int depth) {
  for (const ir::Op& op : block.ops) {
    if (IsTerminator(op)) continue;
    KILN_RETURN_IF_ERROR(EmitOp(scope, op, depth));
  }
  return Status::Ok();
}

StatusOr<int64_t> Writer::Computation(const std::string& base, const ir::Block& block,
                                      const std::vector<ir::ValueId>& params, bool tuple_param,
                                      const std::vector<ir::ValueId>& extra_results,
                                      bool tuple_root, int depth) {
  if (depth > kMaxDepth) {
    return ResourceExhausted("regions nested more than " + std::to_string(kMaxDepth) +
                             " deep cannot be written as HLO computations");
  }
  if (block.ops.empty() || !IsTerminator(block.ops.back())) {
    return InvalidArgument("a region of '" + base + "' does not end in a return");
  }
  Scope scope;
  scope.id = next_id_++;
  scope.name = base + "." + std::to_string(scope.id);
  std::vector<ir::Type> types;
  for (ir::ValueId v : params) types.push_back(module_.type_of(v));
  const Encoder none;
  if (tuple_param) {
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(ir::Type::Tuple(types)));
    Encoder number;
    number.Int(kParameterNumber, 0);
    const int64_t tuple = Add(scope, "parameter", shape, {}, number, -1);
    for (size_t i = 0; i < params.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Encoder part, ShapeOf(types[i]));
      Encoder index;
      index.Int(kTupleIndex, static_cast<int64_t>(i));
      scope.values[params[i]] = Add(scope, "get-tuple-element", part, {tuple}, index, -1);
    }
  } else {
    for (size_t i = 0; i < params.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(types[i]));
      Encoder number;
      number.Int(kParameterNumber, static_cast<int64_t>(i));
      scope.values[params[i]] = Add(scope, "parameter", shape, {}, number, -1);
    }
  }
  KILN_RETURN_IF_ERROR(EmitBlock(scope, block, depth));
  const ir::Op& terminator = block.ops.back();
  std::vector<ir::ValueId> roots = terminator.operands;
  roots.insert(roots.end(), extra_results.begin(), extra_results.end());
  std::vector<int64_t> root_ids;
  std::vector<ir::Type> root_types;
  for (ir::ValueId v : roots) {
    KILN_ASSIGN_OR_RETURN(int64_t id, Operand(scope, terminator, v));
    root_ids.push_back(id);
    root_types.push_back(module_.type_of(v));
  }
  int64_t root;
  if (!tuple_root && root_ids.size() == 1) {
    root = root_ids[0];
  } else {
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(ir::Type::Tuple(root_types)));
    root = Add(scope, "tuple", shape, root_ids, none, terminator.loc);
  }
  Encoder comp;
  comp.Str(1, scope.name);
  for (const std::string& inst : scope.instructions) comp.Str(2, inst);
  comp.Int(5, scope.id);
  comp.Int(6, root);
  computations_.push_back(comp.Take());
  return scope.id;
}

StatusOr<int64_t> Writer::FunctionComputation(const ir::Op& call, int depth) {
  // func.call names its callee; stablehlo.composite its decomposition, which is what it computes.
  const ir::Attr* callee =
      call.attr(call.name == "stablehlo.composite" ? "decomposition" : "callee");
  if (callee == nullptr || callee->kind != ir::Attr::Kind::kSymbolRef) {
    return InvalidArgument(Describe(call) + " has no callee");
  }
  if (auto it = functions_.find(callee->str); it != functions_.end()) return it->second;
  const ir::Function* fn = module_.FindFunction(callee->str);
  if (fn == nullptr || fn->body.blocks.size() != 1) {
    return InvalidArgument(Describe(call) + " calls @" + callee->str +
                           ", which the module does not define as a one-block function");
  }
  if (std::find(active_functions_.begin(), active_functions_.end(), fn->name) !=
      active_functions_.end()) {
    return Unimplemented("@" + fn->name + " calls itself; HLO has no recursion");
  }
  active_functions_.push_back(fn->name);
  const ir::Block& body = fn->body.blocks[0];
  StatusOr<int64_t> id =
      Computation(fn->name, body, body.args, false, {}, fn->result_types.size() != 1, depth + 1);
  active_functions_.pop_back();
  KILN_RETURN_IF_ERROR(id.status(), "function @" + fn->name);
  functions_.emplace(fn->name, *id);
  return *id;
}

StatusOr<std::string> Writer::Run() {
  const ir::Function* main = module_.MainFunction();
  if (main == nullptr || main->body.blocks.size() != 1) {
    return InvalidArgument("the module has no one-block @main to write as HLO");
  }
  const ir::Block& body = main->body.blocks[0];
  KILN_ASSIGN_OR_RETURN(int64_t entry, Computation("main", body, body.args, false, {},
                                                   main->result_types.size() != 1, 0));
  // host_program_shape: parameters = 1, result = 2, parameter_names = 3.
  Encoder program;
  for (const ir::Type& t : main->arg_types) {
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(t));
    program.Message(1, shape);
  }
  KILN_ASSIGN_OR_RETURN(Encoder result, ShapeOf(main->result_types.size() == 1
                                                    ? main->result_types[0]
                                                    : ir::Type::Tuple(main->result_types)));
  program.Message(2, result);
  for (size_t i = 0; i < main->arg_types.size(); ++i) program.Str(3, "Arg_" + std::to_string(i));
  Encoder out;
  out.Str(1, module_.name.empty() ? std::string("main") : module_.name);
  out.Str(2, "main." + std::to_string(entry));
  for (const std::string& comp : computations_) out.Str(3, comp);
  out.Message(4, program);
  out.Int(5, 1);  // id
  out.Int(6, entry);
  return out.Take();
}

}  // namespace hlo_writer

StatusOr<std::string> WriteHloModule(const ir::Module& module) {
  hlo_writer::Writer writer(module);
  return writer.Run();
}

std::string HloProtoOf(const std::string& hlo_module) {
  proto_wire::Encoder proto;
  proto.Str(1, hlo_module);
  return proto.Take();
}

}  // namespace kiln::ingest
