// The direct form of a scatter that writes one contiguous run of its operand and drops an
// update whose window does not fit (kernels/scatter_one.h: x.at[i].set(row) with a scalar i).
// The loop code generator recognises it by its function (Direct::fn == &RunDropUpdate) and emits
// it inline (codegen/native_scatter.cc); it lives here, below both, so both can name it.
#pragma once

#include <cstdint>

#include "ir/dtype.h"
#include "runtime/view.h"

namespace kiln::lower {

// in[0]: the operand (`operand_bytes`); in[1]: the start, one integer of type `start_type`;
// in[2]: the update (`update_bytes`); out[0]: the result, the operand's bytes (not copied when it
// is the operand's memory) with the update's written from byte start * stride when 0 <= start
// <= start_max, and nothing written otherwise.
struct DropUpdateCode {
  uint64_t operand_bytes = 0;
  uint64_t update_bytes = 0;
  ir::DType start_type = ir::DType::kS32;
  int64_t start_max = 0;
  uint64_t stride = 0;
};

// The start as the scatter kernel reads an index (u64 values past INT64_MAX saturate; they are
// out of range for every operand).
int64_t ReadDropStart(const runtime::View& start);

// A Direct::fn: `state` is a DropUpdateCode.
void RunDropUpdate(const void* state, const runtime::View* in, const runtime::View* out);

}  // namespace kiln::lower
