// Calls of registered XLA FFI handlers (kernels/ffi_call.h). Operands and results are Kiln's
// row-major buffers, passed as XLA_FFI_Buffer; token operands and results are buffers of type
// TOKEN without data; a buffer the call lays out otherwise (operand_layouts, result_layouts) is
// copied into that layout for the handler, and a result back. An aliased result
// (output_operand_aliases) starts as a copy of its operand, as XLA's in-place buffer would. The
// handler's error fails the run, naming the target.
#include "kernels/ffi_call.h"

#include <atomic>
#include <cstring>

#include "kernels/custom_call.h"
#include "kernels/lowering.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

struct BufferSpec {
  XLA_FFI_DataType dtype = XLA_FFI_DataType_INVALID;
  std::vector<int64_t> dims;
  bool token = false;
  size_t bytes = 0;
  size_t elem = 0;  // bytes per element
  // The handler's layout when it is not row-major: element strides per dimension. The handler
  // then gets a copy in that layout (operands) or writes one that is copied back (results).
  std::vector<int64_t> strides;
};

// Element strides of minor-to-major layout `m2m` over `dims`.
std::vector<int64_t> LayoutStrides(const std::vector<int64_t>& dims,
                                   const std::vector<int64_t>& m2m) {
  std::vector<int64_t> strides(dims.size(), 0);
  int64_t stride = 1;
  for (int64_t d : m2m) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= dims[static_cast<size_t>(d)];
  }
  return strides;
}

// Copies between Kiln's row-major order and the layout of `s` (to_layout: row-major -> layout).
void CopyLayout(const BufferSpec& s, const std::byte* src, std::byte* dst, bool to_layout) {
  const size_t rank = s.dims.size();
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d;
  if (n <= 0) return;
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;  // of `index` in the layout, in elements
  for (int64_t k = 0; k < n; ++k) {
    const size_t row = static_cast<size_t>(k) * s.elem;
    const size_t laid = static_cast<size_t>(offset) * s.elem;
    std::memcpy(dst + (to_layout ? laid : row), src + (to_layout ? row : laid), s.elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < s.dims[d]) {
        offset += s.strides[d];
        break;
      }
      offset -= s.strides[d] * (s.dims[d] - 1);
      index[d] = 0;
    }
  }
}

// Everything one call site needs at run time; shared by the runs of its kernel.
struct CallSite {
  std::string target;
  runtime::FfiHandler handler;
  std::unique_ptr<FfiAttrs> attrs;
  std::vector<BufferSpec> args, rets;
  std::vector<std::pair<size_t, size_t>> aliases;  // (result, operand)
  size_t copy_bytes = 0;  // the layout copies' total, each rounded up to 64 bytes
  // State the instantiate stage created (XLA_FFI_State_Set); freed with the call site.
  std::vector<std::pair<int64_t, void*>> state;

  ~CallSite() {
    for (auto& [type_id, object] : state) runtime::DeleteFfiState(type_id, object);
  }
};

std::atomic<int64_t> next_run_id{1};

StatusOr<BufferSpec> Spec(const ir::Type& t, const std::string& what) {
  BufferSpec s;
  if (t.kind == ir::Type::Kind::kToken) {
    s.token = true;
    s.dtype = XLA_FFI_DataType_TOKEN;
    return s;
  }
  KILN_RETURN_IF_ERROR(CheckStaticTensor(t, what));
  s.dtype = FfiDataType(t.dtype);
  if (s.dtype == XLA_FFI_DataType_INVALID) {
    return Unimplemented(what + " has type " + TypeString(t) + ", which XLA FFI has no type for");
  }
  s.dims = t.dims;
  s.elem = static_cast<size_t>(ir::DTypeByteSize(t.dtype));
  s.bytes = static_cast<size_t>(Product(t.dims)) * s.elem;
  return s;
}

// JAX emits typed FFI calls with api_version 4; serialized for an older VHLO version they arrive
// as ORIGINAL (1) with the attributes in `mhlo.backend_config`, which XLA reads as typed FFI too.
// The status-returning versions (2, 3) are the untyped custom-call API, which a typed handler
// cannot serve.
bool IsTypedFfi(const ir::Attr* api_version) {
  if (api_version == nullptr) return true;
  if (api_version->kind == ir::Attr::Kind::kEnum) {
    return api_version->str == "API_VERSION_TYPED_FFI" ||
           api_version->str == "API_VERSION_ORIGINAL" ||
           api_version->str == "API_VERSION_UNSPECIFIED";
  }
  std::optional<int64_t> v = api_version->AsInt();
  return v.has_value() && (*v == 4 || *v == 1 || *v == 0);
}

// One frame, filled per run: buffers point at this run's operands and results.
// `data`: per operand then per result, the buffer the handler gets (null: none, e.g. tokens).
Status Call(CallSite& site, XLA_FFI_ExecutionStage stage, runtime::FfiCallContext& call_ctx,
            std::span<void* const> data) {
  const size_t na = site.args.size(), nr = site.rets.size();
  std::vector<XLA_FFI_Buffer> buffers(na + nr);
  std::vector<void*> ptrs(na + nr);
  std::vector<XLA_FFI_ArgType> arg_types(na, XLA_FFI_ArgType_BUFFER);
  std::vector<XLA_FFI_RetType> ret_types(nr, XLA_FFI_RetType_BUFFER);
  for (size_t i = 0; i < na + nr; ++i) {
    BufferSpec& s = i < na ? site.args[i] : site.rets[i - na];
    XLA_FFI_Buffer& b = buffers[i];
    b.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Buffer, dims);
    b.extension_start = nullptr;
    b.dtype = s.dtype;
    b.data = s.token || i >= data.size() ? nullptr : data[i];
    b.rank = static_cast<int64_t>(s.dims.size());
    b.dims = s.dims.data();
    ptrs[i] = &b;
  }
  XLA_FFI_CallFrame frame;
  std::memset(&frame, 0, sizeof(frame));
  frame.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_CallFrame, attrs);
  frame.api = runtime::FfiApi();
  frame.ctx = runtime::AsFfiContext(&call_ctx);
  frame.stage = stage;
  frame.args = {KILN_FFI_STRUCT_SIZE(XLA_FFI_Args, args), nullptr, static_cast<int64_t>(na),
                arg_types.data(), ptrs.data()};
  frame.rets = {KILN_FFI_STRUCT_SIZE(XLA_FFI_Rets, rets), nullptr, static_cast<int64_t>(nr),
                ret_types.data(), ptrs.data() + na};
  frame.attrs = site.attrs->attrs();
  XLA_FFI_Handler* fn =
      stage == XLA_FFI_ExecutionStage_EXECUTE ? site.handler.execute : site.handler.instantiate;
  KILN_RETURN_IF_ERROR(runtime::TakeFfiError(fn(&frame), site.target));
  return runtime::AwaitFfiFuture(frame.future, site.target);
}

// (result, operand) of one output_operand_aliases entry, both within the call's buffers and of
// equal size.
StatusOr<std::pair<size_t, size_t>> AliasPair(const ir::Attr& alias, const CallSite& site) {
  const Status bad = InvalidArgument("FFI call @" + site.target +
                                     ": an output_operand_aliases entry does not pair a result "
                                     "with an operand of its size");
  if (alias.kind != ir::Attr::Kind::kDict) return bad;
  const ir::Attr* operand = alias.Find("operand_index");
  const ir::Attr* output = alias.Find("output_tuple_indices");
  if (operand == nullptr || operand->kind != ir::Attr::Kind::kInt) return bad;
  const int64_t o = operand->i;
  int64_t r = 0;
  if (output != nullptr) {
    std::optional<std::vector<int64_t>> indices = output->AsInts();
    if (!indices.has_value() || indices->size() > 1) return bad;
    if (!indices->empty()) r = indices->front();
  }
  if (o < 0 || r < 0 || static_cast<size_t>(o) >= site.args.size() ||
      static_cast<size_t>(r) >= site.rets.size() ||
      site.args[static_cast<size_t>(o)].bytes != site.rets[static_cast<size_t>(r)].bytes) {
    return bad;
  }
  return std::make_pair(static_cast<size_t>(r), static_cast<size_t>(o));
}

}  // namespace

StatusOr<Kernel> LowerFfiCall(LowerContext& ctx, const std::string& target,
                              const runtime::FfiHandler& handler) {
  const ir::Op& op = ctx.op();
  const std::string where = "FFI call @" + target;
  if (const ir::Attr* v = op.attr("api_version"); !IsTypedFfi(v)) {
    std::string got = "none";
    if (v != nullptr) got = v->kind == ir::Attr::Kind::kEnum ? v->str : std::to_string(v->i);
    return Unimplemented(where +
                         ": the target is a registered XLA FFI handler, which takes typed "
                         "FFI calls (api_version = 4); this call has api_version " +
                         got);
  }
  auto site = std::make_shared<CallSite>();
  site->target = target;
  site->handler = handler;
  std::vector<std::pair<std::string, ir::Attr>> no_attrs;
  const ir::Attr* config = nullptr;
  for (const char* key : {"mhlo.backend_config", "backend_config"}) {
    const ir::Attr* a = op.attr(key);
    if (a != nullptr && a->kind == ir::Attr::Kind::kDict) {
      config = a;
      break;
    }
    if (a != nullptr && a->kind == ir::Attr::Kind::kString && !a->str.empty()) {
      return Unimplemented(where +
                           ": a typed FFI call takes its attributes as a dictionary, not "
                           "the opaque backend_config string");
    }
  }
  KILN_ASSIGN_OR_RETURN(site->attrs, FfiAttrs::FromDict(config ? config->dict : no_attrs, where));
  for (size_t i = 0; i < op.operands.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(BufferSpec s, Spec(ctx.operand_type(i), where + " " + OperandName(i)));
    if (!s.token) {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> layout, OperandLayout(op, ctx.module(), i));
      if (!IsRowMajor(layout)) s.strides = LayoutStrides(s.dims, layout);
    }
    site->args.push_back(std::move(s));
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(BufferSpec s, Spec(ctx.result_type(i), where + " " + ResultName(i)));
    if (!s.token) {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> layout, ResultLayout(op, ctx.module(), i));
      if (!IsRowMajor(layout)) s.strides = LayoutStrides(s.dims, layout);
    }
    site->rets.push_back(std::move(s));
  }
  if (const ir::Attr* aliases = op.attr("output_operand_aliases");
      aliases != nullptr && aliases->kind == ir::Attr::Kind::kArray) {
    for (const ir::Attr& alias : aliases->array) {
      KILN_ASSIGN_OR_RETURN(auto pair, AliasPair(alias, *site));
      site->aliases.push_back(pair);
    }
  }
  for (const std::vector<BufferSpec>* list : {&site->args, &site->rets}) {
    for (const BufferSpec& s : *list) {
      if (!s.strides.empty()) site->copy_bytes += (s.bytes + 63) / 64 * 64;
    }
  }
  if (handler.instantiate != nullptr) {
    runtime::FfiCallContext call_ctx;
    call_ctx.state = &site->state;
    call_ctx.may_set_state = true;
    KILN_RETURN_IF_ERROR(Call(*site, XLA_FFI_ExecutionStage_INSTANTIATE, call_ctx, {}));
  }
  return Kernel(
      [site](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
        const size_t na = site->args.size(), nr = site->rets.size();
        if (in.size() < na || out.size() < nr) {
          return Internal("FFI call @" + site->target + ": too few buffers");
        }
        // Buffers in another layout than row-major live in `copies` for the call.
        std::unique_ptr<std::byte[]> copies;
        if (site->copy_bytes > 0) copies.reset(new std::byte[site->copy_bytes]);
        std::vector<void*> data(na + nr);
        for (size_t i = 0, at = 0; i < na + nr; ++i) {
          const BufferSpec& s = i < na ? site->args[i] : site->rets[i - na];
          const View& v = i < na ? in[i] : out[i - na];
          if (s.strides.empty()) {
            data[i] = v.data();
            continue;
          }
          data[i] = copies.get() + at;
          at += (s.bytes + 63) / 64 * 64;
          if (i < na) {
            CopyLayout(s, static_cast<const std::byte*>(v.data()), static_cast<std::byte*>(data[i]),
                       true);
          }
        }
        for (const auto& [r, o] : site->aliases) {  // the result starts as the operand
          const BufferSpec& s = site->rets[r];
          if (s.bytes == 0) continue;
          const auto* from = static_cast<const std::byte*>(in[o].data());
          auto* to = static_cast<std::byte*>(data[na + r]);
          if (s.strides.empty()) {
            std::memmove(to, from, s.bytes);
          } else {
            CopyLayout(s, from, to, true);
          }
        }
        runtime::FfiCallContext call_ctx;
        call_ctx.user_data = ec.ffi_user_data.get();
        call_ctx.run_id = ec.run_id != 0 ? ec.run_id : next_run_id.fetch_add(1);
        call_ctx.device_ordinal = ec.device_ordinal;
        call_ctx.state = &site->state;
        KILN_RETURN_IF_ERROR(Call(*site, XLA_FFI_ExecutionStage_EXECUTE, call_ctx, data));
        for (size_t r = 0; r < nr; ++r) {
          const BufferSpec& s = site->rets[r];
          if (s.strides.empty()) continue;
          CopyLayout(s, static_cast<const std::byte*>(data[na + r]),
                     static_cast<std::byte*>(out[r].data()), false);
        }
        return Status::Ok();
      });
}

}  // namespace kiln::kernels
