#include "compiler/entry_layouts.h"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::compiler {
namespace {

// "{2,0,1}" (an xla::Layout without tiles or other parts) as minor_to_major, else nullopt.
std::optional<std::vector<int64_t>> ParseLayoutText(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return std::nullopt;
  std::vector<int64_t> out;
  size_t i = 1;
  const size_t end = text.size() - 1;
  while (i < end) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    int64_t v = 0;
    while (i < end && std::isdigit(static_cast<unsigned char>(text[i]))) {
      v = v * 10 + (text[i] - '0');
      if (v > 1'000'000) return std::nullopt;
      ++i;
    }
    out.push_back(v);
    if (i < end) {
      if (text[i] != ',') return std::nullopt;
      ++i;
      if (i == end) return std::nullopt;
    }
  }
  return out;
}

bool IsPermutation(const std::vector<int64_t>& m2m, size_t rank) {
  if (m2m.size() != rank) return false;
  std::vector<bool> seen(rank, false);
  for (int64_t d : m2m) {
    if (d < 0 || static_cast<size_t>(d) >= rank || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
  }
  return true;
}

StatusOr<std::vector<int64_t>> LayoutOf(const ir::Attr& attrs, const ir::Type& type,
                                        const std::string& what) {
  const size_t rank = type.is_tensor() ? type.dims.size() : 0;
  std::vector<int64_t> row_major = RowMajorLayout(rank);
  if (attrs.kind != ir::Attr::Kind::kDict || !type.is_tensor()) return row_major;
  const ir::Attr* mode = attrs.Find("mhlo.layout_mode");
  if (mode == nullptr || mode->kind != ir::Attr::Kind::kString) return row_major;
  if (mode->str == "default" || mode->str == "auto") return row_major;
  std::optional<std::vector<int64_t>> m2m = ParseLayoutText(mode->str);
  if (!m2m.has_value() || !IsPermutation(*m2m, rank)) {
    return Unimplemented("the layout " + mode->str + " (mhlo.layout_mode) of " + what +
                         " is not supported: Kiln honours dense layouts (a permutation of the "
                         "dimensions, no tiles)");
  }
  return *m2m;
}

// The stablehlo.transpose `result = transpose(operand, permutation)`.
ir::Op Transpose(ir::ValueId operand, ir::ValueId result, const std::vector<int64_t>& permutation,
                 int32_t loc) {
  ir::Op op;
  op.name = "stablehlo.transpose";
  op.operands = {operand};
  op.results = {result};
  op.attrs.push_back({"permutation", ir::Attr::IntArray(permutation)});
  op.loc = loc;
  return op;
}

// Major-to-minor order of the dimensions: minor_to_major reversed.
std::vector<int64_t> MajorToMinor(const std::vector<int64_t>& m2m) {
  return std::vector<int64_t>(m2m.rbegin(), m2m.rend());
}

bool IsAuto(const ir::Attr& attrs) {
  if (attrs.kind != ir::Attr::Kind::kDict) return false;
  const ir::Attr* mode = attrs.Find("mhlo.layout_mode");
  return mode != nullptr && mode->kind == ir::Attr::Kind::kString && mode->str == "auto";
}

// For a result whose layout is left to Kiln ("auto") and that is a transpose of a value (through
// sharding constraints): the layout in which the result's memory is the operand's row-major
// memory, as XLA's layout assignment chooses it. Else nullopt (row-major).
std::optional<std::vector<int64_t>> AutoLayoutOf(const ir::Block& block, ir::ValueId value,
                                                 size_t rank) {
  for (int hops = 0; hops < 8; ++hops) {
    const ir::Op* def = nullptr;
    for (const ir::Op& op : block.ops) {
      for (ir::ValueId r : op.results) {
        if (r == value) def = &op;
      }
    }
    if (def == nullptr) return std::nullopt;
    if (def->name == "sdy.sharding_constraint" && def->operands.size() == 1) {
      value = def->operands[0];
      continue;
    }
    if (def->name != "stablehlo.transpose") return std::nullopt;
    const ir::Attr* perm_attr = def->attr("permutation");
    std::optional<std::vector<int64_t>> perm =
        perm_attr != nullptr ? perm_attr->AsInts() : std::nullopt;
    if (!perm.has_value() || !IsPermutation(*perm, rank)) return std::nullopt;
    // result dim j is operand dim perm[j]: the operand's major-to-minor order 0..rank-1 is the
    // result's order perm^-1.
    std::vector<int64_t> major_to_minor(rank);
    for (size_t j = 0; j < rank; ++j) {
      major_to_minor[static_cast<size_t>((*perm)[j])] = static_cast<int64_t>(j);
    }
    return MajorToMinor(major_to_minor);  // reversed again: minor_to_major
  }
  return std::nullopt;
}

// Reorders the per-dimension shardings of an `sdy.sharding` in `attrs` into the physical order.
void PermuteSharding(ir::Attr& attrs, const std::vector<int64_t>& major_to_minor) {
  if (attrs.kind != ir::Attr::Kind::kDict) return;
  for (auto& [key, sharding] : attrs.dict) {
    if (key != "sdy.sharding" || sharding.kind != ir::Attr::Kind::kDict) continue;
    for (auto& [name, dims] : sharding.dict) {
      if (name != "dims" || dims.kind != ir::Attr::Kind::kArray ||
          dims.array.size() != major_to_minor.size()) {
        continue;
      }
      std::vector<ir::Attr> physical;
      for (int64_t d : major_to_minor) physical.push_back(dims.array[static_cast<size_t>(d)]);
      dims.array = std::move(physical);
    }
  }
}

}  // namespace

std::vector<int64_t> RowMajorLayout(size_t rank) {
  std::vector<int64_t> m(rank);
  for (size_t i = 0; i < rank; ++i) m[i] = static_cast<int64_t>(rank - 1 - i);
  return m;
}

std::vector<int64_t> PhysicalDims(const std::vector<int64_t>& logical,
                                  const std::vector<int64_t>& minor_to_major) {
  if (minor_to_major.size() != logical.size()) return logical;
  std::vector<int64_t> out;
  for (int64_t d : MajorToMinor(minor_to_major)) out.push_back(logical[static_cast<size_t>(d)]);
  return out;
}

std::vector<int64_t> LogicalDims(const std::vector<int64_t>& physical,
                                 const std::vector<int64_t>& minor_to_major) {
  if (minor_to_major.size() != physical.size()) return physical;
  std::vector<int64_t> out(physical.size());
  const std::vector<int64_t> order = MajorToMinor(minor_to_major);
  for (size_t k = 0; k < order.size(); ++k) out[static_cast<size_t>(order[k])] = physical[k];
  return out;
}

StatusOr<EntryLayouts> ReadEntryLayouts(const ir::Function& main) {
  EntryLayouts out;
  static const ir::Attr kNone;
  for (size_t i = 0; i < main.arg_types.size(); ++i) {
    const ir::Attr& attrs = i < main.arg_attrs.size() ? main.arg_attrs[i] : kNone;
    KILN_ASSIGN_OR_RETURN(
        std::vector<int64_t> m2m,
        LayoutOf(attrs, main.arg_types[i], "argument #" + std::to_string(i) + " of @" + main.name));
    if (m2m != RowMajorLayout(m2m.size())) out.all_row_major = false;
    out.args.push_back(std::move(m2m));
  }
  for (size_t i = 0; i < main.result_types.size(); ++i) {
    const ir::Attr& attrs = i < main.result_attrs.size() ? main.result_attrs[i] : kNone;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> m2m,
                          LayoutOf(attrs, main.result_types[i],
                                   "result #" + std::to_string(i) + " of @" + main.name));
    if (IsAuto(attrs) && main.result_types[i].is_tensor() && main.body.blocks.size() == 1 &&
        !main.body.blocks[0].ops.empty()) {
      const ir::Op& ret = main.body.blocks[0].ops.back();
      if (ret.name == "func.return" && i < ret.operands.size()) {
        std::optional<std::vector<int64_t>> chosen =
            AutoLayoutOf(main.body.blocks[0], ret.operands[i], m2m.size());
        if (chosen.has_value()) m2m = std::move(*chosen);
      }
    }
    if (m2m != RowMajorLayout(m2m.size())) out.all_row_major = false;
    out.results.push_back(std::move(m2m));
  }
  return out;
}

Status ApplyEntryLayouts(ir::Module& module, ir::Function& main, const EntryLayouts& layouts) {
  if (main.body.blocks.size() != 1) return Status::Ok();  // the compiler refuses it later
  ir::Block& block = main.body.blocks[0];
  if (block.ops.empty() || block.ops.back().name != "func.return" ||
      block.args.size() != main.arg_types.size() ||
      block.ops.back().operands.size() != main.result_types.size()) {
    return InvalidArgument("@" + main.name + " does not match its signature");
  }
  std::vector<ir::Op> entry;
  for (size_t i = 0; i < layouts.args.size() && i < block.args.size(); ++i) {
    const std::vector<int64_t>& m2m = layouts.args[i];
    const ir::Type& logical = main.arg_types[i];
    if (!logical.is_tensor() || m2m == RowMajorLayout(m2m.size())) continue;
    ir::Type physical = ir::Type::Tensor(logical.dtype, PhysicalDims(logical.dims, m2m));
    const ir::ValueId value = block.args[i];  // the logical value the body uses
    const ir::ValueId incoming = module.AddValue(physical);
    // logical[j] = physical[k] where major_to_minor[k] = j.
    const std::vector<int64_t> order = MajorToMinor(m2m);
    std::vector<int64_t> permutation(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      permutation[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    }
    entry.push_back(Transpose(incoming, value, permutation, main.loc));
    block.args[i] = incoming;
    main.arg_types[i] = std::move(physical);
    if (i < main.arg_attrs.size()) PermuteSharding(main.arg_attrs[i], order);
  }
  ir::Op ret = std::move(block.ops.back());
  block.ops.pop_back();
  for (size_t i = 0; i < layouts.results.size() && i < ret.operands.size(); ++i) {
    const std::vector<int64_t>& m2m = layouts.results[i];
    const ir::Type& logical = main.result_types[i];
    if (!logical.is_tensor() || m2m == RowMajorLayout(m2m.size())) continue;
    ir::Type physical = ir::Type::Tensor(logical.dtype, PhysicalDims(logical.dims, m2m));
    const ir::ValueId outgoing = module.AddValue(physical);
    // physical[k] = logical[major_to_minor[k]].
    block.ops.push_back(Transpose(ret.operands[i], outgoing, MajorToMinor(m2m), main.loc));
    ret.operands[i] = outgoing;
    main.result_types[i] = std::move(physical);
    if (i < main.result_attrs.size()) PermuteSharding(main.result_attrs[i], MajorToMinor(m2m));
  }
  block.ops.push_back(std::move(ret));
  block.ops.insert(block.ops.begin(), std::make_move_iterator(entry.begin()),
                   std::make_move_iterator(entry.end()));
  return Status::Ok();
}

}  // namespace kiln::compiler
