// WriteMlirText: an ir::Module printed as MLIR text that MLIR's own parser (jaxlib's) and Kiln's
// text reader (ingest/text_reader.h) read back as the same program: func.func in its pretty form,
// every other op in MLIR's generic form with StableHLO's attribute syntax, e.g.
//
//   %v3 = "stablehlo.compare"(%v1, %v2) <{comparison_direction = #stablehlo<comparison_direction
//       LT>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<4xf32>, ...) -> ...
//
// The IR holds attributes as the VHLO reader produced them (defaults filled in, dimension-number
// records flattened, enums by their spelling): the writer regroups them (#stablehlo.dot<...>,
// #stablehlo.gather<...>, #stablehlo.conv<raw ...>, #stablehlo.channel_handle<...>), gives each
// enum its StableHLO kind by the attribute's name, and prints float literals as hex bits so every
// value is exact. Op locations print as far as the IR keeps them: the user's frame and the op's
// name, `loc("jit(f)/add"("f.py":3:7))`.
//
// Anything it cannot print exactly (an opaque attribute from the bytecode reader, an enum of an
// unknown kind, a multi-block region, ...) is UNIMPLEMENTED naming the op and attribute: never a
// text that means something else.
#pragma once

#include <string>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ir {

StatusOr<std::string> WriteMlirText(const Module& module);

}  // namespace kiln::ir
