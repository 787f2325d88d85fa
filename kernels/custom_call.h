// Helpers for the lowering rules of stablehlo.custom_call targets (lower::CustomCallDef).
//
// JAX's typed-FFI custom calls (api_version 4) carry their attributes in the discardable dictionary
// `mhlo.backend_config`; older ones put a dictionary or an opaque string in `backend_config`.
// Operand and result layouts arrive as minor-to-major lists (`operand_layouts`, `result_layouts`);
// Kiln's arrays are row-major, so a target that asks for another layout converts at its boundary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "lower/op_registry.h"
#include "support/status.h"

namespace kiln::kernels {

// Attribute `name` of the call's backend configuration (either dictionary form), or nullptr.
const ir::Attr* BackendConfigAttr(const ir::Op& op, std::string_view name);
// Integer attribute of the backend configuration (ui8 enums such as LAPACK's mode = 'V').
StatusOr<int64_t> RequiredConfigInt(const ir::Op& op, std::string_view name);
StatusOr<int64_t> OptionalConfigInt(const ir::Op& op, std::string_view name, int64_t fallback);

// The minor-to-major layout of operand (or result) `index`; row-major (rank-1, ..., 0) when the
// call states none.
StatusOr<std::vector<int64_t>> OperandLayout(const ir::Op& op, const ir::Module& module,
                                             size_t index);
StatusOr<std::vector<int64_t>> ResultLayout(const ir::Op& op, const ir::Module& module,
                                            size_t index);

// Layout checks for the usual forms: row-major, and "batch dims row-major, last two dims
// column-major" (LAPACK's matrices: minor-to-major [r-2, r-1, r-3, ..., 0]).
bool IsRowMajor(const std::vector<int64_t>& minor_to_major);
bool IsBatchedColumnMajor(const std::vector<int64_t>& minor_to_major);

}  // namespace kiln::kernels
