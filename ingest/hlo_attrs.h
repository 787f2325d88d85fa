// Attribute builders of the HLO reader, in the forms the StableHLO readers produce: integer lists
// as 1-D i64 literals, paddings, pairs and replica groups as 2-D i64 literals, bool lists as i1
// literals (one byte per element).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {

inline ir::Attr I64Literal(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(ir::DType::kS64, std::move(dims));
  a.data.reserve(values.size() * 8);
  for (int64_t v : values) {
    const uint64_t u = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) a.data.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
  return a;
}

inline ir::Attr I64s(const std::vector<int64_t>& values) {
  return I64Literal(values, {static_cast<int64_t>(values.size())});
}

inline ir::Attr Bools(const std::vector<bool>& values) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(ir::DType::kPred, {static_cast<int64_t>(values.size())});
  for (bool v : values) a.data.push_back(v ? 1 : 0);
  return a;
}

inline ir::Attr Pairs(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::vector<int64_t> flat;
  for (const auto& [a, b] : pairs) flat.insert(flat.end(), {a, b});
  return I64Literal(flat, {static_cast<int64_t>(pairs.size()), 2});
}

// Replica groups as a 2-D literal, shorter groups padded with -1 (as StableHLO writes them).
inline ir::Attr Groups(const std::vector<std::vector<int64_t>>& groups) {
  size_t width = 0;
  for (const auto& g : groups) width = std::max(width, g.size());
  std::vector<int64_t> flat;
  for (const auto& g : groups) {
    flat.insert(flat.end(), g.begin(), g.end());
    flat.insert(flat.end(), width - g.size(), -1);
  }
  return I64Literal(flat, {static_cast<int64_t>(groups.size()), static_cast<int64_t>(width)});
}

inline ir::Attr I32(int64_t v) { return ir::Attr::Int(v, ir::Type::Tensor(ir::DType::kS32, {})); }

inline void Set(ir::Op* op, std::string name, ir::Attr value) {
  op->attrs.push_back({std::move(name), std::move(value)});
}

inline StatusOr<int64_t> FirstDimension(const Instruction& inst) {
  if (inst.dimensions.size() != 1) {
    return DataLoss(Describe(inst) + " needs exactly one entry in `dimensions`");
  }
  return inst.dimensions[0];
}

inline StatusOr<int64_t> Called(const Instruction& inst, size_t i) {
  if (inst.called_computation_ids.size() <= i) {
    return DataLoss(Describe(inst) + " calls " +
                    std::to_string(inst.called_computation_ids.size()) +
                    " computations; expected at least " + std::to_string(i + 1));
  }
  return inst.called_computation_ids[i];
}

}  // namespace kiln::ingest::hlo
