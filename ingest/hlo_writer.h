// The HLO writer: an ir::Module written as a serialized xla.HloModuleProto, the inverse of the HLO
// reader (ingest/hlo_reader.h) on everything the reader produces, so that reading the written
// proto back gives the same program. Used for XLA's dump files (`xla_dump_to`, pjrt/dump.h), which
// XLA's own tools (hlo-opt, jaxlib's XlaComputation) read.
//
// @main becomes the entry computation (its arguments parameters, its results the root: a tuple
// when there are not exactly one); ops with several results get a tuple shape and a
// get-tuple-element per result; regions become computations (reduce, sort, scatter, reduce_window,
// select_and_scatter, all_reduce, reduce_scatter: one parameter per block argument; while: one
// tuple parameter, with the values its regions capture carried along; if / case: branches take a
// tuple of the values they capture); func.call becomes `call` of the callee's computation, and
// stablehlo.composite `call` of its decomposition. Constants a region uses from its function (JAX's
// sort comparators) are written again inside the region's computation. Shapes
// carry row-major layouts (custom calls: their operand and result layouts); constants carry their
// literal; locations become OpMetadata (op_name, source_file, source_line).
//
// Not written: shardings (`mhlo.sharding`; Kiln runs programs in global view, and the proto
// describes the global program), frontend attributes. An op, type or attribute HLO cannot express,
// or one the writer does not know, is UNIMPLEMENTED naming it: never a proto that means something
// else.
#pragma once

#include <string>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest {

StatusOr<std::string> WriteHloModule(const ir::Module& module);

// xla.HloProto { hlo_module = 1 }: the message XLA's dumps write as `*.hlo.pb`.
std::string HloProtoOf(const std::string& hlo_module);

}  // namespace kiln::ingest
