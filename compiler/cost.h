// A static estimate of what a program costs, for `compiled.cost_analysis()`
// (PJRT_Executable_GetCostAnalysis): floating-point operations, transcendental function
// evaluations and bytes read and written, counted once per op as it appears in the program (a
// loop body once, as XLA's own analysis does; a called function once per call).
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

struct CostEstimate {
  double flops = 0;  // multiply-adds count 2; elementwise ops and reductions 1 per element
  double transcendentals = 0;  // exp, log, tanh, sin, pow, ... : 1 per element
  // Operands read plus results written, per op before fusion: an upper bound of what XLA reports
  // after its fusion.
  double bytes_accessed = 0;
};

CostEstimate EstimateCost(const ir::Module& module);

}  // namespace kiln::compiler
