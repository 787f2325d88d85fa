// The indexing family's registration: stablehlo.gather (kernels/gather.cc), stablehlo.scatter
// (kernels/scatter.cc; their shared geometry in kernels/index_geometry.h) and stablehlo.sort
// (kernels/sort.cc).
#include "compiler/op_registry.h"
#include "kernels/families.h"
#include "kernels/index_geometry.h"
#include "kernels/sort.h"

namespace kiln::compiler {

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Add({"stablehlo.gather", "indexing", &kernels::indexing::LowerGather});
  registry.Add({"stablehlo.scatter", "indexing", &kernels::indexing::LowerScatter});
  registry.Add({"stablehlo.sort", "indexing", &kernels::LowerSort});
}

}  // namespace kiln::compiler
