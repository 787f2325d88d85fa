// The IR section, as MLIR's BytecodeReader lays it out:
//
//   op:     varint nameIndex, byte mask, varint locationAttr, [attrDict], [properties],
//           [numResults, typeIndex...], [numOperands, valueIndex...], [successors],
//           [use-list orders], [varint (numRegions << 1 | isolatedFromAbove)], then the regions
//   region: varint numBlocks, [varint numValues, blocks...]
//   block:  varint (numOps << 1 | hasArgs), [args], [use-list orders], ops...
//
// Regions of ops isolated from above are wrapped in a nested IR section (bytecode >= 2) and number
// their values in a fresh scope. Within a scope each region reserves `numValues` consecutive slots
// when it starts and releases them when it ends; block arguments and op results fill the slots in
// the order they are read, and an operand is the absolute slot index in the current scope. Slots
// map onto Kiln's module-wide ValueIds.
//
// Nothing is sized from a count in the file before the bytes behind it have been read: counts only
// bound loops, so nested regions cannot multiply a corrupt count into a huge allocation.
#include "ingest/ir_builder.h"

#include <limits>
#include <optional>
#include <string>

namespace kiln::ingest {
namespace {

// Op encoding mask bits (MLIR's bytecode::OpEncodingMask).
constexpr uint8_t kHasAttrs = 0x01;
constexpr uint8_t kHasResults = 0x02;
constexpr uint8_t kHasOperands = 0x04;
constexpr uint8_t kHasSuccessors = 0x08;
constexpr uint8_t kHasInlineRegions = 0x10;
constexpr uint8_t kHasUseListOrders = 0x20;
constexpr uint8_t kHasProperties = 0x40;

class IrReader {
 public:
  IrReader(const Container& container, AttrTypeDecoder& decoder, LocationTable& locations,
           OpTranslator& translator, ir::Module& module)
      : container_(container),
        decoder_(decoder),
        locations_(locations),
        translator_(translator),
        module_(module) {}

  Status ReadTopLevel();

 private:
  struct Scope {
    std::vector<ir::ValueId> slots;  // -1: not referenced yet
    std::vector<bool> defined;
    std::vector<size_t> next;  // per open region of this scope: the next slot to define
  };

  StatusOr<std::optional<ir::Op>> ReadOp(ByteReader& r, std::string_view parent, int depth);
  // Everything of an op before its regions: name, location, attributes, properties, results,
  // operands, successors, use-lists, region count. Defines the op's results.
  Status ReadOpHeader(ByteReader& r, RawOp& raw, ir::Op& op, bool& isolated);
  Status ReadRegions(ByteReader& r, size_t count, bool isolated, std::string_view parent, int depth,
                     std::vector<ir::Region>& regions);
  Status ReadRegion(ByteReader& r, std::string_view parent, int depth, ir::Region& region);
  Status ReadBlockHeader(ByteReader& r, ir::Block& block, uint64_t& num_ops);
  Status SkipUseListOrders(ByteReader& r, uint64_t range_size);
  Status ReadModuleBody(ByteReader& r, const RawOp& raw, bool isolated, int depth);
  Status ReadFunction(ByteReader& r, const RawOp& raw, bool isolated, int32_t loc, int depth);

  Status OpenRegion(const ByteReader& r, uint64_t num_values);
  Status CloseRegion(const ByteReader& r, uint64_t num_values);
  StatusOr<ir::ValueId> Define(const ByteReader& r, ir::Type type);
  StatusOr<ir::ValueId> Use(ByteReader& r);
  StatusOr<ir::ValueId> NewValue(const ByteReader& r, ir::Type type);

  const Container& container_;
  AttrTypeDecoder& decoder_;
  LocationTable& locations_;
  OpTranslator& translator_;
  ir::Module& module_;
  std::vector<Scope> scopes_;
  uint64_t reserved_values_ = 0;  // slots reserved by all open regions
  bool seen_module_ = false;
};

Status IrReader::ReadTopLevel() {
  ByteReader r(container_.ir);
  // The IR section is one block, without a region header, holding the top-level ops.
  KILN_ASSIGN_OR_RETURN(FlaggedVarInt header, r.ReadVarIntWithFlag());
  if (header.flag) return r.Error("the top-level block has arguments");
  scopes_.emplace_back();
  KILN_RETURN_IF_ERROR(OpenRegion(r, 0));
  for (uint64_t i = 0; i < header.value; ++i) {
    KILN_ASSIGN_OR_RETURN(std::optional<ir::Op> op, ReadOp(r, "", 0));
    if (op) {
      return DataLoss("expected builtin.module at the top level of the artifact, found " +
                      op->name);
    }
  }
  KILN_RETURN_IF_ERROR(CloseRegion(r, 0));
  if (!seen_module_) return DataLoss("the artifact holds no builtin.module");
  return Status::Ok();
}

Status IrReader::ReadOpHeader(ByteReader& r, RawOp& raw, ir::Op& op, bool& isolated) {
  KILN_ASSIGN_OR_RETURN(uint64_t name_index, r.ReadVarInt());
  if (name_index >= container_.op_names.size()) {
    return r.Error("op name index " + std::to_string(name_index) + " out of range (" +
                   std::to_string(container_.op_names.size()) + " names)");
  }
  raw.name = &container_.op_names[static_cast<size_t>(name_index)];
  KILN_ASSIGN_OR_RETURN(uint8_t mask, r.ReadByte());
  KILN_ASSIGN_OR_RETURN(uint64_t loc_index, r.ReadVarInt());
  if (loc_index >= decoder_.num_attrs()) return r.Error("location index out of range");
  op.loc = locations_.Intern(loc_index);
  if (mask & kHasAttrs) {
    KILN_ASSIGN_OR_RETURN(uint64_t dict, r.ReadVarInt());
    raw.attr_dict = dict;
  }
  if (mask & kHasProperties) {
    if (container_.version < kBytecodeNativeProperties) {
      return r.Error("op has properties, which bytecode version " +
                     std::to_string(container_.version) + " cannot carry");
    }
    KILN_ASSIGN_OR_RETURN(uint64_t index, r.ReadVarInt());
    if (raw.name->registered) {
      if (index >= container_.properties.size()) {
        return r.Error("properties index " + std::to_string(index) + " out of range (" +
                       std::to_string(container_.properties.size()) + " entries)");
      }
      raw.properties = container_.properties[static_cast<size_t>(index)];
    } else {
      raw.properties_attr = index;
    }
  }
  std::vector<ir::Type> result_types;
  if (mask & kHasResults) {
    KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("result"));
    for (uint64_t i = 0; i < count; ++i) {
      KILN_ASSIGN_OR_RETURN(uint64_t type_index, r.ReadVarInt());
      KILN_ASSIGN_OR_RETURN(ir::Type type, decoder_.ValueType(type_index));
      result_types.push_back(std::move(type));
    }
  }
  if (mask & kHasOperands) {
    KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("operand"));
    for (uint64_t i = 0; i < count; ++i) {
      KILN_ASSIGN_OR_RETURN(ir::ValueId value, Use(r));
      op.operands.push_back(value);
    }
  }
  if (mask & kHasSuccessors) {
    // Branch targets only occur in unstructured control flow, which VHLO does not have; a foreign
    // op's successors are read past and dropped.
    KILN_ASSIGN_OR_RETURN(uint64_t count, r.ReadCount("successor"));
    for (uint64_t i = 0; i < count; ++i) KILN_RETURN_IF_ERROR(r.ReadVarInt().status());
  }
  if ((mask & kHasUseListOrders) && container_.version >= kBytecodeUseListOrdering) {
    KILN_RETURN_IF_ERROR(SkipUseListOrders(r, result_types.size()));
  }
  if (mask & kHasInlineRegions) {
    KILN_ASSIGN_OR_RETURN(FlaggedVarInt regions, r.ReadVarIntWithFlag());
    if (regions.value == 0 || regions.value > r.remaining()) {
      return r.Error("invalid region count " + std::to_string(regions.value));
    }
    raw.num_regions = static_cast<size_t>(regions.value);
    isolated = regions.flag;
  }
  // Results are defined right after the header, before the op's regions are read.
  for (ir::Type& type : result_types) {
    KILN_ASSIGN_OR_RETURN(ir::ValueId id, Define(r, std::move(type)));
    op.results.push_back(id);
  }
  return Status::Ok();
}

StatusOr<std::optional<ir::Op>> IrReader::ReadOp(ByteReader& r, std::string_view parent,
                                                 int depth) {
  const size_t op_offset = r.offset();
  RawOp raw;
  raw.parent = parent;
  ir::Op op;
  bool isolated = false;
  Status header = ReadOpHeader(r, raw, op, isolated);
  if (!header.ok()) {
    // Errors in this op's own encoding name it; errors in its regions name their own op.
    const std::string name = raw.name != nullptr ? raw.name->full_name : std::string("op");
    return header.WithContext(name + " (op at file offset " + HexOffset(op_offset) + ")");
  }

  const std::string& name = raw.name->full_name;
  auto context = [&] { return name + " (op at file offset " + HexOffset(op_offset) + ")"; };
  if (name == "builtin.module") {
    if (!parent.empty()) return DataLoss("nested builtin.module ops are not supported");
    if (seen_module_) return DataLoss("the artifact holds more than one builtin.module");
    seen_module_ = true;
    if (!op.operands.empty() || !op.results.empty() || raw.num_regions != 1) {
      return DataLoss("builtin.module must have one region and no operands or results");
    }
    if (Status s = translator_.TranslateModule(raw, module_); !s.ok()) {
      return s.WithContext(context());
    }
    KILN_RETURN_IF_ERROR(ReadModuleBody(r, raw, isolated, depth));
    return std::optional<ir::Op>();
  }
  if (name == "vhlo.func_v1") {
    if (parent != "builtin.module") {
      return DataLoss("vhlo.func_v1 appears inside " + std::string(parent) +
                      "; functions must be direct children of the module");
    }
    if (!op.operands.empty() || !op.results.empty()) {
      return DataLoss("vhlo.func_v1 has operands or results");
    }
    KILN_RETURN_IF_ERROR(ReadFunction(r, raw, isolated, op.loc, depth));
    return std::optional<ir::Op>();
  }

  if (Status s = translator_.Translate(raw, op); !s.ok()) {
    // Translation errors (e.g. an op this reader does not know) also name the user's source line.
    return s.WithContext(
        context() + (op.loc >= 0 ? " at " + std::string(module_.location(op.loc)) : std::string()));
  }
  if (raw.num_regions > 0) {
    if (depth + 1 > ir::kMaxNestingDepth) {
      std::string_view loc = module_.location(op.loc);
      return ResourceExhausted(op.name + (loc.empty() ? std::string() : " at " + std::string(loc)) +
                               ": its regions are nested more than " +
                               std::to_string(ir::kMaxNestingDepth) +
                               " levels deep, past Kiln's limit (the reader, compiler and runner "
                               "recurse once per level)");
    }
    KILN_RETURN_IF_ERROR(ReadRegions(r, raw.num_regions, isolated, name, depth + 1, op.regions));
  }
  return std::optional<ir::Op>(std::move(op));
}

Status IrReader::ReadModuleBody(ByteReader& r, const RawOp& raw, bool isolated, int depth) {
  std::vector<ir::Region> regions;
  KILN_RETURN_IF_ERROR(
      ReadRegions(r, raw.num_regions, isolated, raw.name->full_name, depth + 1, regions));
  if (regions.empty() || regions[0].blocks.size() > 1) {
    return DataLoss("builtin.module body must be a single block");
  }
  if (!regions[0].blocks.empty()) {
    ir::Block& body = regions[0].blocks[0];
    if (!body.args.empty()) return DataLoss("builtin.module body has block arguments");
    // Functions went to module_.functions as they were read; everything else stays in order.
    for (ir::Op& op : body.ops) module_.other_ops.push_back(std::move(op));
  }
  return Status::Ok();
}

Status IrReader::ReadFunction(ByteReader& r, const RawOp& raw, bool isolated, int32_t loc,
                              int depth) {
  ir::Function fn;
  fn.loc = loc;
  KILN_RETURN_IF_ERROR(translator_.TranslateFunction(raw, fn).WithContext("vhlo.func_v1"));
  std::vector<ir::Region> regions;
  KILN_RETURN_IF_ERROR(
      ReadRegions(r, raw.num_regions, isolated, raw.name->full_name, depth + 1, regions)
          .WithContext("in function @" + fn.name));
  if (regions.size() != 1) {
    return DataLoss("function @" + fn.name + " has " + std::to_string(regions.size()) +
                    " regions; expected 1");
  }
  fn.body = std::move(regions[0]);
  module_.functions.push_back(std::move(fn));
  return Status::Ok();
}

Status IrReader::ReadRegions(ByteReader& r, size_t count, bool isolated, std::string_view parent,
                             int depth, std::vector<ir::Region>& regions) {
  if (depth > ir::kMaxNestingDepth) {  // ReadOp reports this with the op; this guards the rest
    return ResourceExhausted("regions of " + std::string(parent) + " are nested more than " +
                             std::to_string(ir::kMaxNestingDepth) + " levels deep");
  }
  ByteReader nested;
  ByteReader* reader = &r;
  if (isolated && container_.version >= kBytecodeLazyLoading) {
    KILN_ASSIGN_OR_RETURN(Section section, r.ReadSection());
    if (section.id != kIrSection) {
      return r.Error("expected a nested IR section for the regions of " + std::string(parent) +
                     ", found section " + std::to_string(section.id));
    }
    nested = ByteReader(section);
    reader = &nested;
  }
  if (isolated) scopes_.emplace_back();
  for (size_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(ReadRegion(*reader, parent, depth, regions.emplace_back()));
  }
  if (isolated) scopes_.pop_back();
  return Status::Ok();
}

Status IrReader::ReadRegion(ByteReader& r, std::string_view parent, int depth, ir::Region& region) {
  KILN_ASSIGN_OR_RETURN(uint64_t num_blocks, r.ReadCount("block"));
  if (num_blocks == 0) return Status::Ok();
  KILN_ASSIGN_OR_RETURN(uint64_t num_values, r.ReadVarInt());
  KILN_RETURN_IF_ERROR(OpenRegion(r, num_values));
  for (uint64_t b = 0; b < num_blocks; ++b) {
    ir::Block& block = region.blocks.emplace_back();
    uint64_t num_ops = 0;
    KILN_RETURN_IF_ERROR(ReadBlockHeader(r, block, num_ops));
    for (uint64_t i = 0; i < num_ops; ++i) {
      KILN_ASSIGN_OR_RETURN(std::optional<ir::Op> op, ReadOp(r, parent, depth));
      if (op) block.ops.push_back(std::move(*op));
    }
  }
  return CloseRegion(r, num_values);
}

Status IrReader::ReadBlockHeader(ByteReader& r, ir::Block& block, uint64_t& num_ops) {
  KILN_ASSIGN_OR_RETURN(FlaggedVarInt header, r.ReadVarIntWithFlag());
  // Every op takes at least three bytes (name, mask, location).
  if (header.value > r.remaining() / 3) {
    return r.Error("block claims " + std::to_string(header.value) + " ops in " +
                   std::to_string(r.remaining()) + " bytes");
  }
  num_ops = header.value;
  if (!header.flag) return Status::Ok();

  KILN_ASSIGN_OR_RETURN(uint64_t num_args, r.ReadCount("block argument"));
  for (uint64_t i = 0; i < num_args; ++i) {
    uint64_t type_index = 0;
    bool has_loc = true;
    if (container_.version >= kBytecodeElideBlockArgLoc) {
      KILN_ASSIGN_OR_RETURN(FlaggedVarInt arg, r.ReadVarIntWithFlag());
      type_index = arg.value;
      has_loc = arg.flag;
    } else {
      KILN_ASSIGN_OR_RETURN(type_index, r.ReadVarInt());
    }
    if (has_loc) KILN_RETURN_IF_ERROR(r.ReadVarInt().status());  // argument locations are unused
    KILN_ASSIGN_OR_RETURN(ir::Type type, decoder_.ValueType(type_index));
    KILN_ASSIGN_OR_RETURN(ir::ValueId id, Define(r, std::move(type)));
    block.args.push_back(id);
  }
  if (container_.version >= kBytecodeUseListOrdering) {
    KILN_ASSIGN_OR_RETURN(uint8_t has_use_lists, r.ReadByte());
    if (has_use_lists != 0) KILN_RETURN_IF_ERROR(SkipUseListOrders(r, num_args));
  }
  return Status::Ok();
}

// Use-list orders only permute MLIR's in-memory use chains; Kiln has none, so they are skipped:
// `[varint numValues if range > 1]`, then per value `[varint index if range > 1]`,
// `varint (numIndices << 1 | pairEncoding)`, indices.
Status IrReader::SkipUseListOrders(ByteReader& r, uint64_t range_size) {
  uint64_t num_values = 1;
  if (range_size > 1) {
    KILN_ASSIGN_OR_RETURN(num_values, r.ReadCount("use-list order"));
  }
  for (uint64_t v = 0; v < num_values; ++v) {
    if (range_size > 1) KILN_RETURN_IF_ERROR(r.ReadVarInt().status());
    KILN_ASSIGN_OR_RETURN(FlaggedVarInt indices, r.ReadVarIntWithFlag());
    if (indices.value > r.remaining()) return r.Error("use-list order overruns its data");
    for (uint64_t i = 0; i < indices.value; ++i) KILN_RETURN_IF_ERROR(r.ReadVarInt().status());
  }
  return Status::Ok();
}

Status IrReader::OpenRegion(const ByteReader& r, uint64_t num_values) {
  // Each value of the open regions is defined by at least one distinct byte of the IR section, so
  // reservations beyond its size can only come from corrupt input.
  if (num_values > container_.ir.data.size() - reserved_values_) {
    return r.Error("region declares " + std::to_string(num_values) +
                   " values, more than the IR section can define");
  }
  Scope& scope = scopes_.back();
  scope.next.push_back(scope.slots.size());
  scope.slots.resize(scope.slots.size() + static_cast<size_t>(num_values), -1);
  scope.defined.resize(scope.slots.size(), false);
  reserved_values_ += num_values;
  return Status::Ok();
}

Status IrReader::CloseRegion(const ByteReader& r, uint64_t num_values) {
  Scope& scope = scopes_.back();
  const size_t begin = scope.slots.size() - static_cast<size_t>(num_values);
  for (size_t i = begin; i < scope.slots.size(); ++i) {
    if (scope.slots[i] >= 0 && !scope.defined[i]) {
      return r.Error("value slot #" + std::to_string(i) + " is used but never defined");
    }
  }
  scope.slots.resize(begin);
  scope.defined.resize(begin);
  scope.next.pop_back();
  reserved_values_ -= num_values;
  return Status::Ok();
}

StatusOr<ir::ValueId> IrReader::NewValue(const ByteReader& r, ir::Type type) {
  if (module_.value_types.size() >= static_cast<size_t>(std::numeric_limits<ir::ValueId>::max())) {
    return r.Error("too many values");
  }
  return module_.AddValue(std::move(type));
}

StatusOr<ir::ValueId> IrReader::Define(const ByteReader& r, ir::Type type) {
  Scope& scope = scopes_.back();
  if (scope.next.empty()) return r.Error("value defined outside any region");
  size_t& slot = scope.next.back();
  if (slot >= scope.slots.size()) {
    return r.Error("region defines more values than it declared");
  }
  ir::ValueId id = scope.slots[slot];
  if (id >= 0) {
    module_.value_types[static_cast<size_t>(id)] = std::move(type);  // resolves a forward use
  } else {
    KILN_ASSIGN_OR_RETURN(id, NewValue(r, std::move(type)));
    scope.slots[slot] = id;
  }
  scope.defined[slot] = true;
  ++slot;
  return id;
}

StatusOr<ir::ValueId> IrReader::Use(ByteReader& r) {
  KILN_ASSIGN_OR_RETURN(uint64_t index, r.ReadVarInt());
  Scope& scope = scopes_.back();
  if (index >= scope.slots.size()) {
    return r.Error("operand refers to value slot #" + std::to_string(index) + ", but only " +
                   std::to_string(scope.slots.size()) + " are in scope");
  }
  ir::ValueId& id = scope.slots[static_cast<size_t>(index)];
  if (id < 0) {
    // A use before the definition (legal in MLIR): the type is filled in when it is defined.
    KILN_ASSIGN_OR_RETURN(id, NewValue(r, ir::Type::Opaque("<forward reference>")));
  }
  return id;
}

}  // namespace

Status BuildModule(const Container& container, AttrTypeDecoder& decoder, LocationTable& locations,
                   OpTranslator& translator, ir::Module& module) {
  IrReader reader(container, decoder, locations, translator, module);
  return reader.ReadTopLevel();
}

}  // namespace kiln::ingest
