// stablehlo.custom_call @kiln_host_callback: runs a Python callable in the middle of a program
// (jax.pure_callback, jax.experimental.io_callback, jax.debug.callback / jax.debug.print), through
// the trampoline Kiln's Python package installs (runtime/host_callback.h). The Python side lowers
// the callback with its id in the backend config (`callback_id`), and knows the operand and
// result types; Kiln hands it one pointer per non-token operand and result. Token operands and
// results (ordered effects) carry no data: steps run in program order, which is the ordering.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/custom_call.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"
#include "runtime/host_callback.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

StatusOr<Kernel> LowerHostCallback(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(int64_t id, RequiredConfigInt(op, "callback_id"));
  std::vector<bool> arg_is_data, result_is_data;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const ir::Type& t = ctx.operand_type(i);
    if (t.kind != ir::Type::Kind::kToken) {
      KILN_RETURN_IF_ERROR(CheckStaticTensor(t, "operand #" + std::to_string(i)));
    }
    arg_is_data.push_back(t.kind != ir::Type::Kind::kToken);
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    const ir::Type& t = ctx.result_type(i);
    if (t.kind != ir::Type::Kind::kToken) {
      KILN_RETURN_IF_ERROR(CheckStaticTensor(t, "result #" + std::to_string(i)));
    }
    result_is_data.push_back(t.kind != ir::Type::Kind::kToken);
  }
  const uint64_t callback_id = static_cast<uint64_t>(id);
  const bool has_data_results =
      std::find(result_is_data.begin(), result_is_data.end(), true) != result_is_data.end();
  return Kernel(
      [callback_id, arg_is_data, result_is_data, has_data_results](
          ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
        // Another process's device: that process runs its callback (a print, an io_callback without
        // results). One with results runs here too, as this process needs them for its global view.
        if (ec.OnRemoteDevice() && !has_data_results) return Status::Ok();
        // Pointers for the callback's own operands (the op's captures, if any, come after them).
        void* args[64];
        void* results[64];
        std::vector<void*> many_args, many_results;
        void** a = args;
        void** r = results;
        if (arg_is_data.size() > 64 || result_is_data.size() > 64) {
          many_args.resize(arg_is_data.size());
          many_results.resize(result_is_data.size());
          a = many_args.data();
          r = many_results.data();
        }
        size_t na = 0, nr = 0;
        for (size_t i = 0; i < arg_is_data.size() && i < in.size(); ++i) {
          if (arg_is_data[i]) a[na++] = in[i].data();
        }
        for (size_t i = 0; i < result_is_data.size() && i < out.size(); ++i) {
          if (result_is_data[i]) r[nr++] = out[i].data();
        }
        return runtime::InvokeHostCallback(callback_id, {a, na}, {r, nr});
      });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterCallbackTargets(OpRegistry& registry) {
  registry.AddCustomCall({"kiln_host_callback", "callback", &kernels::LowerHostCallback});
}

}  // namespace kiln::kernels
