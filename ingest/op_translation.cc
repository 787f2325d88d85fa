#include "ingest/op_translation.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace kiln::ingest {
namespace {

using DictEntry = AttrTypeDecoder::DictEntry;

bool InSchema(const VhloOpSchema& schema, std::string_view name) {
  return std::any_of(schema.attrs.begin(), schema.attrs.end(),
                     [&](const char* attr) { return name == attr; });
}

ir::Attr* FindAttr(ir::Op& op, std::string_view name) {
  for (ir::NamedAttr& attr : op.attrs) {
    if (attr.name == name) return &attr.value;
  }
  return nullptr;
}

// VHLO spells symbol references as plain strings; StableHLO uses symbol refs.
void StringToSymbolRef(ir::Attr* attr) {
  if (attr != nullptr && attr->kind == ir::Attr::Kind::kString) {
    *attr = ir::Attr::SymbolRef(attr->str);
  }
}

ir::Attr EmptyI64List() {
  ir::Attr list;
  list.kind = ir::Attr::Kind::kElements;
  list.type = ir::Type::Tensor(ir::DType::kS64, {0});
  return list;
}

// Brings attributes of older op versions to the newest StableHLO form where that is exact, so
// kernels see one shape of op regardless of the producer's version. Attributes an older version
// lacks and that have no neutral value stay absent (Op::attr returns nullptr).
void NormalizeAcrossVersions(std::string_view vhlo_name, ir::Op& op) {
  if (vhlo_name == "vhlo.call_v1") {
    StringToSymbolRef(FindAttr(op, "callee"));
  } else if (vhlo_name == "vhlo.custom_call_v1" || vhlo_name == "vhlo.custom_call_v2") {
    if (ir::Attr* called = FindAttr(op, "called_computations");
        called != nullptr && called->kind == ir::Attr::Kind::kArray) {
      for (ir::Attr& callee : called->array) StringToSymbolRef(&callee);
    }
  } else if (vhlo_name == "vhlo.composite_v1" || vhlo_name == "vhlo.composite_v2") {
    StringToSymbolRef(FindAttr(op, "decomposition"));
  }

  // Batching dimensions arrived in gather_v2/scatter_v2 (1.1.0); v1 ops simply have none.
  std::vector<const char*> added;
  if (vhlo_name == "vhlo.gather_v1" || vhlo_name == "vhlo.dynamic_gather_v1") {
    added = {"operand_batching_dims", "start_indices_batching_dims"};
  } else if (vhlo_name == "vhlo.scatter_v1") {
    added = {"input_batching_dims", "scatter_indices_batching_dims"};
  }
  if (!added.empty()) {
    for (const char* name : added) op.attrs.push_back({name, EmptyI64List()});
    std::stable_sort(
        op.attrs.begin(), op.attrs.end(),
        [](const ir::NamedAttr& a, const ir::NamedAttr& b) { return a.name < b.name; });
  }
}

// The properties of the sdy ops Kiln reads, as ODS writes them: one attribute index per
// property, in alphabetical order of the property names (all required here).
const std::vector<const char*>* SdyPropertyNames(std::string_view op_name) {
  static const auto* table = new std::unordered_map<std::string_view, std::vector<const char*>>{
      {"sdy.mesh", {"mesh", "sym_name"}},
      {"sdy.manual_computation", {"in_shardings", "manual_axes", "out_shardings"}},
      {"sdy.sharding_constraint", {"sharding"}},
      {"sdy.reshard", {"sharding"}},
  };
  auto it = table->find(op_name);
  return it == table->end() ? nullptr : &it->second;
}

}  // namespace

StatusOr<std::vector<OpTranslator::AttrRef>> OpTranslator::ReadPropertyIndices(
    const RawOp& raw, std::span<const char* const> names) {
  std::vector<AttrRef> refs;
  ByteReader reader(*raw.properties);
  for (const char* name : names) {
    KILN_ASSIGN_OR_RETURN(
        const uint64_t index, reader.ReadVarInt(),
        "properties of " + raw.name->full_name + " end before attribute '" + name + "'");
    if (index >= decoder_.num_attrs()) {
      return reader.Error("attribute '" + std::string(name) + "' of " + raw.name->full_name +
                          " has index " + std::to_string(index) + " out of range");
    }
    refs.push_back({name, index});
  }
  if (!reader.empty()) {
    return reader.Error("properties of " + raw.name->full_name + " hold more than the " +
                        std::to_string(names.size()) + " attributes its schema names");
  }
  return refs;
}

Status OpTranslator::SplitAttributes(const RawOp& raw, const VhloOpSchema* schema,
                                     std::vector<AttrRef>& inherent,
                                     std::vector<AttrRef>& discardable) {
  if (raw.properties && schema != nullptr) {
    // Registered VHLO op: one required attribute index per schema slot, in schema order.
    KILN_ASSIGN_OR_RETURN(
        inherent, ReadPropertyIndices(raw, std::span<const char* const>(schema->attrs.begin(),
                                                                        schema->attrs.size())));
  }
  // Ops written unregistered keep their properties as one attribute (a dictionary, if anything).
  std::vector<DictEntry> from_properties_attr;
  if (raw.properties_attr && schema != nullptr) {
    KILN_ASSIGN_OR_RETURN(from_properties_attr, decoder_.DictionaryEntries(*raw.properties_attr));
  }
  std::vector<DictEntry> dictionary;
  if (raw.attr_dict) {
    KILN_ASSIGN_OR_RETURN(dictionary, decoder_.DictionaryEntries(*raw.attr_dict));
  }

  // Without a properties blob (bytecode < 5, or written unregistered), inherent attributes travel
  // by name; collect them in schema order.
  if (schema != nullptr && !raw.properties) {
    std::unordered_map<std::string, uint64_t> by_name;
    for (const DictEntry& e : from_properties_attr) by_name.emplace(e.name, e.value);
    for (const DictEntry& e : dictionary) {
      if (InSchema(*schema, e.name)) by_name.emplace(e.name, e.value);
    }
    for (const char* name : schema->attrs) {
      if (auto it = by_name.find(name); it != by_name.end()) inherent.push_back({name, it->second});
    }
  }
  for (const DictEntry& e : dictionary) {
    if (schema != nullptr && !raw.properties && InSchema(*schema, e.name)) continue;
    discardable.push_back({e.name, e.value});
  }
  return Status::Ok();
}

StatusOr<std::vector<ir::NamedAttr>> OpTranslator::Materialize(const std::vector<AttrRef>& refs) {
  std::vector<ir::NamedAttr> out;
  out.reserve(refs.size());
  for (const AttrRef& ref : refs) {
    KILN_ASSIGN_OR_RETURN(const ir::Attr* value, decoder_.Attr(ref.index),
                          "attribute '" + ref.name + "'");
    KILN_RETURN_IF_ERROR(decoder_.ChargeCopy(*value));
    out.push_back({ref.name, *value});
  }
  return out;
}

Status OpTranslator::Translate(const RawOp& raw, ir::Op& op) {
  const std::string& full_name = raw.name->full_name;
  const std::string_view dialect = decoder_.container().dialect_name(raw.name->dialect);
  std::vector<AttrRef> inherent, discardable;

  if (dialect != "vhlo") {
    // Foreign op (sdy, builtin casts, ...): kept by name. The properties of the sdy ops Kiln
    // partitions are read (see SdyPropertyNames); others are not interpreted.
    op.name = full_name;
    op.foreign = true;
    KILN_RETURN_IF_ERROR(SplitAttributes(raw, nullptr, inherent, discardable));
    KILN_ASSIGN_OR_RETURN(op.discardable, Materialize(discardable));
    if (const std::vector<const char*>* names = SdyPropertyNames(full_name);
        names != nullptr && raw.properties) {
      KILN_ASSIGN_OR_RETURN(std::vector<AttrRef> props, ReadPropertyIndices(raw, *names));
      KILN_ASSIGN_OR_RETURN(op.attrs, Materialize(props));
    }
    return Status::Ok();
  }

  const VhloOpSchema* schema = FindVhloOpSchema(full_name);
  if (schema == nullptr) {
    return InvalidArgument("unknown VHLO operation '" + full_name +
                           "': the artifact was produced by " + std::string(producer_) +
                           ", and Kiln's op table covers VHLO up to " +
                           std::string(VhloSchemaVersion()));
  }
  if (schema->regions >= 0 && raw.num_regions != static_cast<size_t>(schema->regions)) {
    return DataLoss(full_name + " has " + std::to_string(raw.num_regions) + " regions; expected " +
                    std::to_string(schema->regions));
  }
  KILN_RETURN_IF_ERROR(SplitAttributes(raw, schema, inherent, discardable));
  KILN_ASSIGN_OR_RETURN(op.attrs, Materialize(inherent));
  KILN_ASSIGN_OR_RETURN(op.discardable, Materialize(discardable));
  op.name = schema->stablehlo_name;
  if (full_name == "vhlo.return_v1" && raw.parent == "vhlo.func_v1") op.name = "func.return";
  NormalizeAcrossVersions(full_name, op);
  return Status::Ok();
}

Status OpTranslator::TranslateFunction(const RawOp& raw, ir::Function& fn) {
  std::vector<AttrRef> inherent, discardable;
  KILN_RETURN_IF_ERROR(
      SplitAttributes(raw, FindVhloOpSchema("vhlo.func_v1"), inherent, discardable));
  // The name first, so that errors about the other attributes can say which function they concern.
  for (const AttrRef& ref : inherent) {
    if (ref.name != "sym_name") continue;
    KILN_ASSIGN_OR_RETURN(const ir::Attr* value, decoder_.Attr(ref.index));
    if (value->kind != ir::Attr::Kind::kString) return DataLoss("function name is not a string");
    fn.name = value->str;
  }
  const ir::Attr* arg_attrs = nullptr;
  const ir::Attr* res_attrs = nullptr;
  bool has_signature = false;
  for (const AttrRef& ref : inherent) {
    KILN_ASSIGN_OR_RETURN(const ir::Attr* value, decoder_.Attr(ref.index));
    if (ref.name == "sym_visibility") {
      fn.visibility = value->kind == ir::Attr::Kind::kString ? value->str : "";
    } else if (ref.name == "function_type") {
      KILN_ASSIGN_OR_RETURN(const DecodedType* type, decoder_.TypeAttrValue(ref.index));
      if (type == nullptr || type->kind != DecodedType::Kind::kFunction) {
        return DataLoss("function_type of @" + fn.name + " is not a function type");
      }
      fn.arg_types = type->inputs;
      fn.result_types = type->results;
      has_signature = true;
    } else if (ref.name == "arg_attrs") {
      arg_attrs = value;
    } else if (ref.name == "res_attrs") {
      res_attrs = value;
    }
  }
  if (!has_signature) return DataLoss("function @" + fn.name + " has no function_type");
  if (fn.visibility.empty()) fn.visibility = "public";  // MLIR's default when unspecified

  // One dictionary (or None) per argument/result; VHLO writes an empty array when there are none.
  auto per_value = [&](const ir::Attr* attrs, size_t count,
                       const char* what) -> StatusOr<std::vector<ir::Attr>> {
    std::vector<ir::Attr> out(count);
    if (attrs == nullptr || attrs->kind != ir::Attr::Kind::kArray || attrs->array.empty()) {
      return out;
    }
    if (attrs->array.size() != count) {
      return DataLoss(std::string(what) + " of @" + fn.name + " has " +
                      std::to_string(attrs->array.size()) + " entries for " +
                      std::to_string(count) + " values");
    }
    for (size_t i = 0; i < count; ++i) {
      KILN_RETURN_IF_ERROR(decoder_.ChargeCopy(attrs->array[i]));
      out[i] = attrs->array[i];
    }
    return out;
  };
  KILN_ASSIGN_OR_RETURN(fn.arg_attrs, per_value(arg_attrs, fn.arg_types.size(), "arg_attrs"));
  KILN_ASSIGN_OR_RETURN(fn.result_attrs, per_value(res_attrs, fn.result_types.size(), "res_attrs"));
  return Status::Ok();
}

Status OpTranslator::TranslateModule(const RawOp& raw, ir::Module& module) {
  if (raw.properties) {
    // builtin.module's properties: optional sym_name, optional sym_visibility, each written as
    // `varint (attrIndex << 1 | present)`.
    ByteReader reader(*raw.properties);
    KILN_ASSIGN_OR_RETURN(FlaggedVarInt sym_name, reader.ReadVarIntWithFlag());
    if (sym_name.flag) {
      KILN_ASSIGN_OR_RETURN(const ir::Attr* name, decoder_.Attr(sym_name.value));
      if (name->kind == ir::Attr::Kind::kString) module.name = name->str;
    }
  }
  if (raw.attr_dict) {
    KILN_ASSIGN_OR_RETURN(std::vector<DictEntry> entries,
                          decoder_.DictionaryEntries(*raw.attr_dict));
    for (const DictEntry& entry : entries) {
      KILN_ASSIGN_OR_RETURN(const ir::Attr* value, decoder_.Attr(entry.value));
      if (entry.name == "sym_name") {  // bytecode < 5 keeps it in the dictionary
        if (value->kind == ir::Attr::Kind::kString) module.name = value->str;
        continue;
      }
      if (entry.name == "sym_visibility") continue;
      KILN_RETURN_IF_ERROR(decoder_.ChargeCopy(*value));
      module.attrs.push_back({entry.name, *value});
    }
  }
  return Status::Ok();
}

}  // namespace kiln::ingest
