// HLO -> ir::Module translation, shared by the structural part (ingest/hlo_reader.cc:
// computations, parameters, tuples, control flow) and the per-opcode part (ingest/hlo_ops.cc).
//
// Tuples are flattened: every HLO value is held as its list of leaves (the ir values of its
// non-tuple parts, in order), so `tuple` and `get-tuple-element` emit nothing, entry parameters
// and results that are tuples become several function arguments/results, and ops with tuple
// results (reduce, sort, while, all-reduce, rng-bit-generator, ...) become ops with several
// results, as in StableHLO.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/hlo_proto.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest::hlo {

// HLO opcodes that map to one StableHLO op without attributes (hlo_ops.cc); the HLO writer
// (hlo_writer_ops.cc) reads the same table backwards.
const std::unordered_map<std::string_view, std::string_view>& PlainOps();

using Leaves = std::vector<ir::ValueId>;

// An emitted HLO value: its leaves and its HLO shape.
struct Value {
  Leaves leaves;
  const Shape* shape = nullptr;
};

// How deeply computations may nest (regions and inlined calls). A computation that calls itself,
// directly or not, is refused as it is met; this bounds legitimate nesting, so that translating
// stays well inside a thread's stack (also under AddressSanitizer, whose frames are larger).
inline constexpr int kMaxComputationDepth = 64;

class Translator {
 public:
  Translator(const Module& proto, ir::Module& out) : proto_(proto), out_(out) {}

  // Builds `main` from the entry computation.
  Status Run();

  // ---- used by the per-opcode emitters ----
  ir::Module& module() { return out_; }
  // The leaf types of `shape`, appended to `types`; errors for dynamic, opaque or unknown types.
  Status LeafTypes(const Shape& shape, std::vector<ir::Type>& types) const;
  // Adds an op named `name` to `block` with `operands`, results typed by `inst`'s shape; returns
  // it (its results are also the instruction's leaves).
  StatusOr<ir::Op*> AddOp(ir::Block& block, const Instruction& inst, std::string name,
                          Leaves operands);
  // A region holding computation `id` (of `user`): the computation's parameters become block
  // arguments (flattened), its root's leaves are returned by stablehlo.return.
  StatusOr<ir::Region> RegionFor(const Instruction& user, int64_t id, int depth);
  // A region without arguments (if / case branches): the computation's parameters are bound to
  // `params`, values of the enclosing scope.
  StatusOr<ir::Region> CapturingRegionFor(const Instruction& user, int64_t id,
                                          const std::vector<Leaves>& params, int depth);
  // Emits computation `id` inline into `block` (call), with its parameters bound to `params`.
  StatusOr<Leaves> Inline(const Instruction& user, int64_t id, ir::Block& block,
                          const std::vector<Leaves>& params, int depth);

 private:
  using Env = std::unordered_map<int64_t, Value>;

  StatusOr<const Computation*> Find(const Instruction& user, int64_t id) const;
  StatusOr<Leaves> EmitComputation(const Computation& comp, ir::Block& block,
                                   const std::vector<Leaves>& params, int depth);
  // The per-opcode part (ingest/hlo_ops.cc); `operands` are the instruction's operand values.
  StatusOr<Leaves> EmitInstruction(const Instruction& inst, const std::vector<Value>& operands,
                                   const std::vector<Leaves>& params, ir::Block& block, int depth);
  StatusOr<Leaves> EmitCollective(const Instruction& inst, const Leaves& flat, ir::Block& block,
                                  int depth);
  // batch-norm-training / -inference / -grad, expanded (ingest/hlo_ops_batchnorm.cc).
  StatusOr<Leaves> EmitBatchNorm(const Instruction& inst, const Leaves& flat, ir::Block& block);
  // erf: the polynomial StableHLO writes for chlo.erf (ingest/hlo_ops_erf.cc).
  StatusOr<Leaves> EmitErf(const Instruction& inst, const Leaves& flat, ir::Block& block);
  // topk: a stable sort of (values, iota) along the last dimension, then slices of k.
  StatusOr<Leaves> EmitTopK(const Instruction& inst, const Leaves& flat, ir::Block& block);
  StatusOr<Leaves> EmitWindowed(const Instruction& inst, const Leaves& flat, ir::Block& block,
                                int depth);
  int32_t Location(const Instruction& inst);

  const Module& proto_;
  ir::Module& out_;
  std::unordered_map<std::string, int32_t> locations_;
  int32_t current_loc_ = -1;
  std::vector<const Computation*> active_;  // the computations being emitted, outermost first
};

// The ir element type of xla.PrimitiveType `primitive`; nullopt for tuples, tokens, opaque and
// types Kiln does not have.
std::optional<ir::DType> DTypeOf(int primitive);

// The backend_config text of a typed-FFI custom call (`{name = 1 : ui8, ...}`) as a dictionary.
StatusOr<ir::Attr> TypedFfiBackendConfig(std::string_view text);

// Error context naming an instruction: "instruction 'add.3' (add)".
std::string Describe(const Instruction& inst);

}  // namespace kiln::ingest::hlo
