// Kernel: the executable form of one op, produced at compile time by the op's lowering rule.
// Shapes, dtypes and attributes are resolved during lowering, so a kernel only moves data.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "runtime/array.h"
#include "support/status.h"

namespace kiln::compiler {

// What a kernel may ask about where it runs (collectives and partition-id need it).
struct ExecContext {
  int device_ordinal = 0;
  int replica_id = 0;
  int partition_id = 0;
};

// `outputs` arrives sized to the op's result count; the kernel fills every entry, either with a new
// array or by aliasing an input's storage (reshape, bitcast) since arrays are immutable once made.
using Kernel = std::function<Status(ExecContext& ctx, std::span<const runtime::Array> inputs,
                                    std::span<runtime::Array> outputs)>;

}  // namespace kiln::compiler
