// The indexing family's registration: stablehlo.gather (kernels/gather.cc), stablehlo.scatter
// (kernels/scatter.cc; their shared geometry in kernels/index_geometry.h) and stablehlo.sort
// (kernels/sort.cc).
#include "kernels/families.h"
#include "kernels/index_geometry.h"
#include "kernels/sort.h"
#include "lower/op_registry.h"

namespace kiln::kernels {

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Add({"stablehlo.gather", "indexing", &kernels::indexing::LowerGather});
  registry.Add({"stablehlo.scatter", "indexing", &kernels::indexing::LowerScatter});
  registry.Add({"stablehlo.sort", "indexing", &kernels::LowerSort});
}

}  // namespace kiln::kernels
