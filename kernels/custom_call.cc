// stablehlo.custom_call: the op is one registry entry whose lowering hands the call to the
// lowering rule its target registered (lower::OpRegistry::AddCustomCall). Target families:
// kernels/lapack_*.cc (JAX's CPU linear-algebra calls), kernels/callback.cc,
// kernels/approx_top_k.cc; targets registered as XLA FFI handlers: kernels/ffi_call.cc; here:
// @dce_sink, the memory placement markers, @LayoutConstraint and @Sharding.
#include "kernels/custom_call.h"

#include <string>

#include "kernels/families.h"
#include "kernels/ffi_call.h"
#include "kernels/lowering.h"

namespace kiln::kernels {
namespace {

using lower::Kernel;
using lower::LowerContext;

const ir::Attr* ConfigDict(const ir::Op& op) {
  for (const char* key : {"mhlo.backend_config", "backend_config"}) {
    const ir::Attr* a = op.attr(key);
    if (a != nullptr && a->kind == ir::Attr::Kind::kDict) return a;
  }
  return nullptr;
}

StatusOr<std::vector<int64_t>> Layout(const ir::Op& op, std::string_view attr, size_t index,
                                      size_t rank) {
  std::vector<int64_t> row_major(rank);
  for (size_t i = 0; i < rank; ++i) row_major[i] = static_cast<int64_t>(rank - 1 - i);
  const ir::Attr* layouts = FindAttr(op, attr);
  if (layouts == nullptr || layouts->kind != ir::Attr::Kind::kArray) return row_major;
  if (index >= layouts->array.size()) {
    return InvalidArgument(std::string(attr) + " has " + std::to_string(layouts->array.size()) +
                           " entries; entry " + std::to_string(index) + " is missing");
  }
  const ir::Attr& entry = layouts->array[index];
  std::optional<std::vector<int64_t>> m2m = entry.AsInts();
  if (!m2m || m2m->size() != rank) {
    return InvalidArgument(std::string(attr) + "[" + std::to_string(index) +
                           "] is not a layout of rank " + std::to_string(rank));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t d : *m2m) {
    if (d < 0 || d >= static_cast<int64_t>(rank) || seen[d]) {
      return InvalidArgument(std::string(attr) + "[" + std::to_string(index) +
                             "] is not a permutation of the dimensions");
    }
    seen[d] = true;
  }
  return *m2m;
}

// @dce_sink (lax.dce_sink(x, prevent_mlir_dce=True)): marks its operands as used so that nothing
// removes the ops computing them; it computes nothing itself.
StatusOr<Kernel> LowerDceSink(LowerContext& ctx) {
  if (!ctx.op().results.empty()) return InvalidArgument("@dce_sink has no results");
  return Kernel([](lower::ExecContext&, std::span<const runtime::View>,
                   std::span<const runtime::View>) -> Status { return Status::Ok(); });
}

// Placement markers JAX and XLA's host-offloading passes put in programs:
// @annotate_device_placement (a value's memory kind, `_xla_buffer_placement` in its frontend
// attributes), @MoveToHost and @MoveToDevice (host offloading, remat to host, compute_on). On a
// CPU every memory kind is the same host memory, so each forwards its operand.
StatusOr<Kernel> LowerPlacementMarker(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  if (!(ctx.operand_type(0) == ctx.result_type(0))) {
    return InvalidArgument("result type differs from the operand type");
  }
  return Kernel::Forward(1);
}

// @LayoutConstraint (jax.lax.with_sharding_constraint with a Format): the value in the layout of
// `result_layouts`. A layout changes no value, and inside a program every Kiln value is row-major,
// so the constraint forwards its operand once its layout is checked to be a dense one. (A result's
// own layout comes from its `mhlo.layout_mode`, compiler/entry_layouts.h.)
StatusOr<Kernel> LowerLayoutConstraint(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  if (!(ctx.operand_type(0) == ctx.result_type(0))) {
    return InvalidArgument("result type differs from the operand type");
  }
  KILN_RETURN_IF_ERROR(ResultLayout(ctx.op(), ctx.module(), 0).status());
  return Kernel::Forward(1);
}

// @Sharding (GSPMD's sharding annotation: what jaxlib's StableHLO-to-HLO conversion writes for a
// value's `sdy.sharding`, e.g. `sharding={replicated}` on a PRNG key, and what GSPMD-era modules
// carry for with_sharding_constraint): a sharding changes no value, so it forwards its operand.
// Kiln's partitioner places values by the program's Shardy and `mhlo.sharding` attributes, not by
// this annotation.
StatusOr<Kernel> LowerShardingAnnotation(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  if (!(ctx.operand_type(0) == ctx.result_type(0))) {
    return InvalidArgument("result type differs from the operand type");
  }
  return Kernel::Forward(1);
}

// A LAPACK (or other linear-algebra) target whose operands, results or attributes do not match
// what it takes (INVALID_ARGUMENT from its lowering rule): XLA checks a custom call's arguments
// only when the handler runs, so a program holding such a call compiles there (JAX's own tests
// compile `@lapack_sgetrf_ffi` without operands) and fails when the call executes. Kiln does the
// same: the call compiles to a kernel that fails with the mismatch, naming the target. Everything
// else (an element type or a size Kiln does not support) stays a compile-time error.
StatusOr<Kernel> LowerLinalgCall(LowerContext& ctx, const lower::CustomCallDef& def) {
  StatusOr<Kernel> kernel = def.lower(ctx);
  if (kernel.ok() || kernel.status().code() != StatusCode::kInvalidArgument) return kernel;
  const std::string message =
      kernel.status().message() + " (XLA checks a call's arguments when it runs; so does Kiln)";
  return Kernel(
      [message](lower::ExecContext&, std::span<const runtime::View>,
                std::span<const runtime::View>) -> Status { return InvalidArgument(message); });
}

StatusOr<Kernel> LowerCustomCall(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  const ir::Attr* target = op.attr("call_target_name");
  if (target == nullptr) return InvalidArgument("has no call_target_name");
  const lower::CustomCallDef* def = kernels::Registry().FindCustomCall(target->str);
  if (def != nullptr && def->family == "linalg") return LowerLinalgCall(ctx, *def);
  if (def != nullptr) return def->lower(ctx);
  // A target a client registered as an XLA FFI handler (kernels/ffi_call.h).
  if (const runtime::FfiHandler* handler = runtime::FindFfiHandler(target->str)) {
    return LowerFfiCall(ctx, target->str, *handler);
  }
  return Unimplemented("custom call target @" + target->str +
                       " is not supported (and no XLA FFI handler is registered under that name "
                       "for platform kiln)");
}

}  // namespace

const ir::Attr* BackendConfigAttr(const ir::Op& op, std::string_view name) {
  const ir::Attr* dict = ConfigDict(op);
  return dict != nullptr ? dict->Find(name) : nullptr;
}

StatusOr<int64_t> RequiredConfigInt(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = BackendConfigAttr(op, name);
  std::optional<int64_t> v = a != nullptr ? a->AsInt() : std::nullopt;
  if (!v) return InvalidArgument("backend_config needs an integer `" + std::string(name) + "`");
  return *v;
}

StatusOr<int64_t> OptionalConfigInt(const ir::Op& op, std::string_view name, int64_t fallback) {
  if (BackendConfigAttr(op, name) == nullptr) return fallback;
  return RequiredConfigInt(op, name);
}

StatusOr<std::vector<int64_t>> OperandLayout(const ir::Op& op, const ir::Module& module,
                                             size_t index) {
  return Layout(op, "operand_layouts", index, module.type_of(op.operands.at(index)).dims.size());
}

StatusOr<std::vector<int64_t>> ResultLayout(const ir::Op& op, const ir::Module& module,
                                            size_t index) {
  return Layout(op, "result_layouts", index, module.type_of(op.results.at(index)).dims.size());
}

bool IsRowMajor(const std::vector<int64_t>& m2m) {
  for (size_t i = 0; i < m2m.size(); ++i) {
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  }
  return true;
}

bool IsBatchedColumnMajor(const std::vector<int64_t>& m2m) {
  const int64_t r = static_cast<int64_t>(m2m.size());
  if (r < 2) return IsRowMajor(m2m);
  if (m2m[0] != r - 2 || m2m[1] != r - 1) return false;
  for (int64_t i = 2; i < r; ++i) {
    if (m2m[i] != r - 1 - i) return false;
  }
  return true;
}

}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterCustomCallOps(OpRegistry& registry) {
  registry.Add({"stablehlo.custom_call", "custom_call", &kernels::LowerCustomCall});
  registry.AddCustomCall({"dce_sink", "custom_call", &kernels::LowerDceSink});
  registry.AddCustomCall({"LayoutConstraint", "custom_call", &kernels::LowerLayoutConstraint});
  registry.AddCustomCall({"Sharding", "custom_call", &kernels::LowerShardingAnnotation});
  for (const char* marker : {"annotate_device_placement", "MoveToHost", "MoveToDevice"}) {
    registry.AddCustomCall({marker, "custom_call", &kernels::LowerPlacementMarker});
  }
}

}  // namespace kiln::kernels
