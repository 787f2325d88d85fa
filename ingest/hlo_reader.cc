// The structural half of the HLO reader: the entry computation becomes `main`, called
// computations become regions (or are inlined, for `call`), parameters and tuples are resolved to
// leaves. Per-opcode translation is in ingest/hlo_ops.cc.
#include "ingest/hlo_reader.h"

#include <algorithm>
#include <optional>
#include <string>

#include "ingest/hlo_translate.h"
#include "ingest/proto_wire.h"

namespace kiln::ingest {
namespace hlo {

std::optional<ir::DType> DTypeOf(int primitive) {
  switch (primitive) {
    case 1:
      return ir::DType::kPred;
    case 2:
      return ir::DType::kS8;
    case 3:
      return ir::DType::kS16;
    case 4:
      return ir::DType::kS32;
    case 5:
      return ir::DType::kS64;
    case 6:
      return ir::DType::kU8;
    case 7:
      return ir::DType::kU16;
    case 8:
      return ir::DType::kU32;
    case 9:
      return ir::DType::kU64;
    case 10:
      return ir::DType::kF16;
    case 11:
      return ir::DType::kF32;
    case 12:
      return ir::DType::kF64;
    case 15:
      return ir::DType::kC64;
    case 16:
      return ir::DType::kBF16;
    case 18:
      return ir::DType::kC128;
    case 19:
      return ir::DType::kF8E5M2;
    case 20:
      return ir::DType::kF8E4M3FN;
    case 21:
      return ir::DType::kS4;
    case 22:
      return ir::DType::kU4;
    case 23:
      return ir::DType::kF8E4M3B11FNUZ;
    case 24:
      return ir::DType::kF8E5M2FNUZ;
    case 25:
      return ir::DType::kF8E4M3FNUZ;
    case 26:
      return ir::DType::kS2;
    case 27:
      return ir::DType::kU2;
    case 28:
      return ir::DType::kF8E4M3;
    case 29:
      return ir::DType::kF8E3M4;
    case 30:
      return ir::DType::kS1;
    case 31:
      return ir::DType::kU1;
    case 32:
      return ir::DType::kF4E2M1FN;
    case 33:
      return ir::DType::kF8E8M0FNU;
    default:
      return std::nullopt;
  }
}

namespace {

// Entry layouts Kiln accepts: none, or a plain dimension order (any permutation). Kiln's buffers
// are always row-major (PJRT_Buffer_GetMemoryLayout says so) and callers copy through PJRT, so a
// permuted entry layout in the module (XLA writes {0,1} for a transposed result) asks for another
// device layout, never for other values. Tiled, sparse, sub-byte packed
// or memory-space layouts are refused.
bool IsPlainLayout(const Shape& shape) {
  if (!shape.has_layout) return true;
  if (shape.layout_unusual) return false;
  if (shape.minor_to_major.empty()) return true;  // a layout message without an order
  const size_t rank = shape.dims.size();
  if (shape.minor_to_major.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : shape.minor_to_major) {
    if (d < 0 || static_cast<size_t>(d) >= rank || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
  }
  return true;
}

Status CheckLayout(const Shape& shape, const std::string& what) {
  for (const Shape& element : shape.tuple) KILN_RETURN_IF_ERROR(CheckLayout(element, what));
  if (!shape.tuple.empty() || IsPlainLayout(shape)) return Status::Ok();
  std::string m2m;
  for (int64_t d : shape.minor_to_major) m2m += (m2m.empty() ? "" : ",") + std::to_string(d);
  return Unimplemented(what + " has layout {" + m2m + "}" +
                       (shape.layout_unusual ? " with tiling, memory space or element size" : "") +
                       "; Kiln reads HLO layouts that order dimensions only (its buffers are "
                       "row-major)");
}

// Parameter shapes of a computation, by parameter number.
// `mhlo.sharding` of leaves [first, first + count) of @main's arguments or results from `inst`'s
// sharding: one per leaf, or one for them all.
Status SetShardings(const Instruction& inst, size_t first, size_t count,
                    std::vector<ir::Attr>& attrs) {
  if (inst.sharding.size() != count && inst.sharding.size() != 1) {
    return DataLoss(Describe(inst) + " has a sharding of " + std::to_string(inst.sharding.size()) +
                    " leaves for a value of " + std::to_string(count));
  }
  for (size_t k = 0; k < count && first + k < attrs.size(); ++k) {
    const std::string& text = inst.sharding[inst.sharding.size() == 1 ? 0 : k];
    attrs[first + k] = ir::Attr::Dict({{"mhlo.sharding", ir::Attr::String(text)}});
  }
  return Status::Ok();
}

StatusOr<std::vector<const Shape*>> ParameterShapes(const Computation& comp) {
  std::vector<const Shape*> shapes;
  for (const Instruction& inst : comp.instructions) {
    if (inst.opcode != "parameter") continue;
    if (inst.parameter_number < 0 ||
        inst.parameter_number >= static_cast<int64_t>(comp.instructions.size())) {
      return DataLoss(Describe(inst) + " has parameter_number " +
                      std::to_string(inst.parameter_number));
    }
    const size_t n = static_cast<size_t>(inst.parameter_number);
    if (shapes.size() <= n) shapes.resize(n + 1, nullptr);
    if (shapes[n] != nullptr) {
      return DataLoss("computation '" + comp.name + "' has two parameters numbered " +
                      std::to_string(n));
    }
    shapes[n] = &inst.shape;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i] == nullptr) {
      return DataLoss("computation '" + comp.name + "' has no parameter " + std::to_string(i));
    }
  }
  return shapes;
}

}  // namespace

std::string Describe(const Instruction& inst) {
  return "instruction '" + inst.name + "' (" + inst.opcode + ")";
}

Status Translator::LeafTypes(const Shape& shape, std::vector<ir::Type>& types) const {
  if (shape.element_type == kPrimitiveTuple) {
    for (const Shape& element : shape.tuple) KILN_RETURN_IF_ERROR(LeafTypes(element, types));
    return Status::Ok();
  }
  if (shape.element_type == kPrimitiveToken) {
    types.push_back(ir::Type::Token());
    return Status::Ok();
  }
  std::optional<ir::DType> dtype = DTypeOf(shape.element_type);
  if (!dtype) {
    return Unimplemented("element type " + std::to_string(shape.element_type) +
                         (shape.element_type == kPrimitiveOpaque ? " (OPAQUE_TYPE)" : "") +
                         " is not supported by Kiln's HLO reader");
  }
  if (shape.any_dynamic) return Unimplemented("dynamic dimensions are not supported");
  for (int64_t d : shape.dims) {
    if (d < 0) return DataLoss("negative dimension size " + std::to_string(d));
  }
  types.push_back(ir::Type::Tensor(*dtype, shape.dims));
  if (types.back().num_elements() < 0) return DataLoss("shape has too many elements");
  return Status::Ok();
}

int32_t Translator::Location(const Instruction& inst) {
  std::string text;
  if (!inst.source_file.empty()) {
    text = inst.source_file + ":" + std::to_string(inst.source_line);
    if (!inst.op_name.empty()) text += " (" + inst.op_name + ")";
  } else if (!inst.op_name.empty()) {
    text = inst.op_name;
  } else {
    text = inst.name;
  }
  auto [it, inserted] = locations_.emplace(text, static_cast<int32_t>(out_.locations.size()));
  if (inserted) out_.locations.push_back(text);
  return it->second;
}

StatusOr<ir::Op*> Translator::AddOp(ir::Block& block, const Instruction& inst, std::string name,
                                    Leaves operands) {
  std::vector<ir::Type> types;
  KILN_RETURN_IF_ERROR(LeafTypes(inst.shape, types));
  ir::Op op;
  op.name = std::move(name);
  op.operands = std::move(operands);
  for (ir::Type& t : types) op.results.push_back(out_.AddValue(std::move(t)));
  op.loc = current_loc_;
  block.ops.push_back(std::move(op));
  return &block.ops.back();
}

StatusOr<const Computation*> Translator::Find(const Instruction& user, int64_t id) const {
  for (const Computation& comp : proto_.computations) {
    if (comp.id == id) return &comp;
  }
  return DataLoss(Describe(user) + " calls computation id " + std::to_string(id) +
                  ", which the module does not define");
}

StatusOr<ir::Region> Translator::RegionFor(const Instruction& user, int64_t id, int depth) {
  KILN_ASSIGN_OR_RETURN(const Computation* comp, Find(user, id));
  KILN_ASSIGN_OR_RETURN(std::vector<const Shape*> shapes, ParameterShapes(*comp));
  ir::Region region;
  region.blocks.emplace_back();
  std::vector<Leaves> params;
  for (const Shape* shape : shapes) {
    std::vector<ir::Type> types;
    KILN_RETURN_IF_ERROR(LeafTypes(*shape, types),
                         "a parameter of computation '" + comp->name + "'");
    Leaves leaves;
    for (ir::Type& t : types) leaves.push_back(out_.AddValue(std::move(t)));
    region.blocks[0].args.insert(region.blocks[0].args.end(), leaves.begin(), leaves.end());
    params.push_back(std::move(leaves));
  }
  KILN_ASSIGN_OR_RETURN(Leaves root, EmitComputation(*comp, region.blocks[0], params, depth + 1));
  ir::Op ret;
  ret.name = "stablehlo.return";
  ret.operands = std::move(root);
  ret.loc = current_loc_;
  region.blocks[0].ops.push_back(std::move(ret));
  return region;
}

StatusOr<ir::Region> Translator::CapturingRegionFor(const Instruction& user, int64_t id,
                                                    const std::vector<Leaves>& params, int depth) {
  KILN_ASSIGN_OR_RETURN(const Computation* comp, Find(user, id));
  ir::Region region;
  region.blocks.emplace_back();
  KILN_ASSIGN_OR_RETURN(Leaves root, EmitComputation(*comp, region.blocks[0], params, depth + 1));
  ir::Op ret;
  ret.name = "stablehlo.return";
  ret.operands = std::move(root);
  ret.loc = current_loc_;
  region.blocks[0].ops.push_back(std::move(ret));
  return region;
}

StatusOr<Leaves> Translator::Inline(const Instruction& user, int64_t id, ir::Block& block,
                                    const std::vector<Leaves>& params, int depth) {
  KILN_ASSIGN_OR_RETURN(const Computation* comp, Find(user, id));
  return EmitComputation(*comp, block, params, depth + 1);
}

StatusOr<Leaves> Translator::EmitComputation(const Computation& comp, ir::Block& block,
                                             const std::vector<Leaves>& params, int depth) {
  if (std::find(active_.begin(), active_.end(), &comp) != active_.end()) {
    return ResourceExhausted("computation '" + comp.name + "' calls itself");
  }
  if (depth > kMaxComputationDepth) {
    return ResourceExhausted("computation '" + comp.name + "' is nested more than " +
                             std::to_string(kMaxComputationDepth) + " calls deep");
  }
  if (comp.instructions.empty()) return DataLoss("computation '" + comp.name + "' is empty");
  active_.push_back(&comp);
  struct Leave {
    std::vector<const Computation*>& active;
    ~Leave() { active.pop_back(); }
  } leave{active_};
  Env env;
  const int32_t saved_loc = current_loc_;
  for (const Instruction& inst : comp.instructions) {
    if (!inst.has_shape) return DataLoss(Describe(inst) + " has no shape");
    std::vector<Value> operands;
    operands.reserve(inst.operand_ids.size());
    for (int64_t id : inst.operand_ids) {
      auto it = env.find(id);
      if (it == env.end()) {
        return DataLoss(Describe(inst) + " in computation '" + comp.name + "' uses operand id " +
                        std::to_string(id) + ", which no earlier instruction defines");
      }
      operands.push_back(it->second);
    }
    current_loc_ = Location(inst);
    KILN_ASSIGN_OR_RETURN(Leaves leaves, EmitInstruction(inst, operands, params, block, depth),
                          Describe(inst) + " in computation '" + comp.name + "'");
    // Every value's leaves must match its declared shape.
    std::vector<ir::Type> types;
    KILN_RETURN_IF_ERROR(LeafTypes(inst.shape, types), Describe(inst));
    if (types.size() != leaves.size()) {
      return DataLoss(Describe(inst) + " has shape with " + std::to_string(types.size()) +
                      " parts but produces " + std::to_string(leaves.size()));
    }
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (!(out_.type_of(leaves[i]) == types[i])) {
        return DataLoss(Describe(inst) + " declares " + types[i].ToString() + " but its value is " +
                        out_.type_of(leaves[i]).ToString());
      }
    }
    if (!env.emplace(inst.id, Value{std::move(leaves), &inst.shape}).second) {
      return DataLoss(Describe(inst) + " reuses instruction id " + std::to_string(inst.id));
    }
  }
  current_loc_ = saved_loc;
  const int64_t root_id = comp.root_id.value_or(comp.instructions.back().id);
  auto root = env.find(root_id);
  if (root == env.end()) {
    return DataLoss("computation '" + comp.name + "' has root id " + std::to_string(root_id) +
                    ", which none of its instructions has");
  }
  return root->second.leaves;
}

Status Translator::Run() {
  if (proto_.computations.empty()) return DataLoss("HloModuleProto has no computations");
  const Computation* entry = nullptr;
  for (const Computation& comp : proto_.computations) {
    if (proto_.entry_id ? comp.id == *proto_.entry_id : comp.name == proto_.entry_name) {
      entry = &comp;
    }
  }
  if (entry == nullptr) {
    if (proto_.entry_id || !proto_.entry_name.empty()) {
      return DataLoss("HloModuleProto names entry computation '" + proto_.entry_name + "' (id " +
                      std::to_string(proto_.entry_id.value_or(-1)) + "), which it does not hold");
    }
    entry = &proto_.computations.back();
  }
  out_.name = proto_.name;
  out_.producer = "HloModuleProto";
  ir::Function fn;
  fn.name = "main";
  fn.visibility = "public";
  fn.body.blocks.emplace_back();
  ir::Block& body = fn.body.blocks[0];
  KILN_ASSIGN_OR_RETURN(std::vector<const Shape*> shapes, ParameterShapes(*entry));
  std::vector<Leaves> params;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string what = "entry parameter " + std::to_string(i);
    if (!proto_.has_program_shape) KILN_RETURN_IF_ERROR(CheckLayout(*shapes[i], what));
    std::vector<ir::Type> types;
    KILN_RETURN_IF_ERROR(LeafTypes(*shapes[i], types), what);
    Leaves leaves;
    for (ir::Type& t : types) {
      fn.arg_types.push_back(t);
      leaves.push_back(out_.AddValue(std::move(t)));
    }
    body.args.insert(body.args.end(), leaves.begin(), leaves.end());
    params.push_back(std::move(leaves));
  }
  KILN_ASSIGN_OR_RETURN(Leaves results, EmitComputation(*entry, body, params, 0));
  // The layouts the caller's buffers have: the host program shape's (interior instructions,
  // the root included, may carry other layouts XLA's layout assignment chose; they do not change
  // values).
  if (proto_.has_program_shape) {
    for (size_t i = 0; i < proto_.program_parameters.size(); ++i) {
      KILN_RETURN_IF_ERROR(
          CheckLayout(proto_.program_parameters[i], "entry parameter " + std::to_string(i)));
    }
    KILN_RETURN_IF_ERROR(CheckLayout(proto_.program_result, "the entry result"));
  } else {
    const int64_t root_id = entry->root_id.value_or(entry->instructions.back().id);
    for (const Instruction& inst : entry->instructions) {
      if (inst.id == root_id) KILN_RETURN_IF_ERROR(CheckLayout(inst.shape, "the entry result"));
    }
  }
  for (ir::ValueId v : results) fn.result_types.push_back(out_.type_of(v));
  fn.arg_attrs.resize(fn.arg_types.size());
  fn.result_attrs.resize(fn.result_types.size());
  // The entry's parameter and root shardings, as `mhlo.sharding` on @main's (flattened) values.
  std::vector<size_t> first_leaf(params.size() + 1, 0);
  for (size_t i = 0; i < params.size(); ++i) first_leaf[i + 1] = first_leaf[i] + params[i].size();
  const int64_t root = entry->root_id.value_or(entry->instructions.back().id);
  for (const Instruction& inst : entry->instructions) {
    if (inst.sharding.empty()) continue;
    if (inst.opcode == "parameter" && inst.parameter_number >= 0 &&
        static_cast<size_t>(inst.parameter_number) < params.size()) {
      const size_t p = static_cast<size_t>(inst.parameter_number);
      KILN_RETURN_IF_ERROR(SetShardings(inst, first_leaf[p], params[p].size(), fn.arg_attrs));
    }
    if (inst.id == root) {
      KILN_RETURN_IF_ERROR(SetShardings(inst, 0, fn.result_types.size(), fn.result_attrs));
    }
  }
  ir::Op ret;
  ret.name = "func.return";
  ret.operands = std::move(results);
  body.ops.push_back(std::move(ret));
  out_.functions.push_back(std::move(fn));
  return Status::Ok();
}

}  // namespace hlo

StatusOr<ir::Module> ReadHloModule(std::span<const uint8_t> bytes, bool with_config) {
  KILN_ASSIGN_OR_RETURN(hlo::Module proto, hlo::DecodeModule(bytes, with_config));
  ir::Module module;
  hlo::Translator translator(proto, module);
  KILN_RETURN_IF_ERROR(translator.Run());
  return module;
}

namespace {

void AppendVarint(std::string& out, uint64_t v) {
  do {
    const uint8_t byte = v & 0x7F;
    v >>= 7;
    out.push_back(static_cast<char>(v != 0 ? byte | 0x80 : byte));
  } while (v != 0);
}

void AppendField(std::string& out, uint32_t number, std::string_view payload) {
  AppendVarint(out, uint64_t{number} << 3 | proto_wire::kLengthDelimited);
  AppendVarint(out, payload.size());
  out.append(payload);
}

}  // namespace

StatusOr<std::string> HloModuleWithConfig(std::span<const uint8_t> hlo_module, int64_t replicas,
                                          int64_t partitions) {
  // HloModuleProto.host_program_shape (field 4), as it is.
  std::string program_shape;
  KILN_RETURN_IF_ERROR(proto_wire::ForEachField(
      proto_wire::Reader(hlo_module, 0),
      [&](const proto_wire::Field& f, proto_wire::Reader& in) -> StatusOr<bool> {
        if (f.number != 4 || f.type != proto_wire::kLengthDelimited) return false;
        KILN_ASSIGN_OR_RETURN(proto_wire::Reader shape, in.Sub());
        const std::span<const uint8_t> bytes = shape.rest();
        program_shape.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        return true;
      }));
  // HloModuleConfigProto: entry_computation_layout = 1, replica_count = 4, num_partitions = 5.
  std::string config;
  AppendField(config, 1, program_shape);
  AppendVarint(config, 4 << 3 | proto_wire::kVarint);
  AppendVarint(config, static_cast<uint64_t>(std::max<int64_t>(replicas, 1)));
  AppendVarint(config, 5 << 3 | proto_wire::kVarint);
  AppendVarint(config, static_cast<uint64_t>(std::max<int64_t>(partitions, 1)));
  // HloModuleProtoWithConfig: hlo_module = 1, config = 2.
  std::string out;
  AppendField(
      out, 1,
      std::string_view(reinterpret_cast<const char*>(hlo_module.data()), hlo_module.size()));
  AppendField(out, 2, config);
  return out;
}

}  // namespace kiln::ingest
