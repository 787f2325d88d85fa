// Small bitwise reductions for inline loop code (kernels/reduce_bits.h): which input elements
// each output element folds. The reduce kernel runs pred as bytes with and/or (PredReducerKind)
// and integers' and/or/xor bitwise; those are exact in any order, so the generator may fold the
// elements as it likes and still write the kernel's bytes.
#include "kernels/reduce_bits.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/dtype.h"

namespace kiln::kernels {

std::shared_ptr<const lower::BitReduceCode> PlanBitReduce(ReducerKind kind, ir::DType dtype,
                                                          const std::vector<int64_t>& dims,
                                                          const std::vector<bool>& reduced) {
  if (dtype == ir::DType::kPred) {
    kind = PredReducerKind(kind);
  } else if (!ir::IsInteger(dtype) || ir::IsSubByte(dtype)) {
    return nullptr;
  }
  lower::MapOp op = lower::MapOp::kNone;
  if (kind == ReducerKind::kAnd) op = lower::MapOp::kAnd;
  if (kind == ReducerKind::kOr) op = lower::MapOp::kOr;
  if (kind == ReducerKind::kXor) op = lower::MapOp::kXor;
  if (op == lower::MapOp::kNone) return nullptr;
  int64_t elements = 1, outputs = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    elements *= dims[d];
    if (!reduced[d]) outputs *= dims[d];
  }
  if (elements < 1 || elements > kMaxInlineBitReduce) return nullptr;
  // Per input element (row-major), its output element (row-major over the kept axes).
  std::vector<std::vector<uint32_t>> of(static_cast<size_t>(outputs));
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t e = 0; e < elements; ++e) {
    int64_t o = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) o = o * dims[d] + idx[d];
    }
    of[static_cast<size_t>(o)].push_back(static_cast<uint32_t>(e));
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  auto code = std::make_shared<lower::BitReduceCode>();
  code->op = op;
  code->width = static_cast<int>(ir::DTypeByteSize(dtype));
  for (const std::vector<uint32_t>& list : of) {
    code->first.push_back(static_cast<uint32_t>(code->elements.size()));
    code->elements.insert(code->elements.end(), list.begin(), list.end());
  }
  code->first.push_back(static_cast<uint32_t>(code->elements.size()));
  return code;
}

}  // namespace kiln::kernels
