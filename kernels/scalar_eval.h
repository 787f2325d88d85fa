// ScalarEvaluator: runs a scalar region made only of comparisons, selections and boolean logic
// directly on element bits, without building arrays or running a Program per call.
//
// These are the bodies JAX emits for argmax/argmin reductions and for multi-key or NaN-aware sort
// comparators: compare (FLOAT, TOTALORDER, SIGNED, UNSIGNED), select, and, or, xor, not, constants
// (in the region or captured from outside it) and return. None of them computes a new number,
// so evaluating them on the raw bits is exact: values are copied, never rounded. A region with any
// other op is left to the compiled Program.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/module.h"
#include "kernels/scalar_body.h"

namespace kiln::kernels {

class ScalarEvaluator {
 public:
  // nullopt when the region is outside the supported subset.
  static std::optional<ScalarEvaluator> Build(const ir::Module& module, const ir::Region& region);

  const std::vector<ir::DType>& arg_dtypes() const { return arg_dtypes_; }
  const std::vector<ir::DType>& result_dtypes() const { return result_dtypes_; }
  // Whether the region reads any constant (its own or a captured one).
  bool has_constants() const { return !constants_.empty(); }

  // Reads one element per argument, writes one per result (results may alias arguments).
  // `scratch` is reused between calls to avoid allocating.
  void Run(std::span<const void* const> args, std::span<void* const> results,
           std::vector<uint64_t>& scratch) const;

 private:
  enum class Code : uint8_t {
    kCompareFloat,
    kCompareTotal,
    kCompareSigned,
    kCompareUnsigned,
    kSelect,
    kAnd,
    kOr,
    kXor,
    kNot
  };
  struct Instr {
    Code code;
    CompareDirection dir;
    ir::DType dtype;  // operand type (compare) or result type
    int32_t a, b, c, dst;
  };

  std::vector<ir::DType> arg_dtypes_, result_dtypes_;
  std::vector<std::pair<int32_t, uint64_t>> constants_;  // slot, bits
  std::vector<Instr> code_;
  std::vector<int32_t> result_slots_;
  int32_t num_slots_ = 0;
};

}  // namespace kiln::kernels
