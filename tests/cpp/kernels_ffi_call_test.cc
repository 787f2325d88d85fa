// Calls of registered XLA FFI handlers (kernels/ffi_call.cc, runtime/ffi.cc): the call frame a
// handler receives (buffers, attributes sorted and typed, stage, API table), its errors, user data
// by type id, instantiate-stage state, asynchronous completion, and the registries.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "abi/xla_ffi_api.h"
#include "kernels/ffi_call.h"
#include "runtime/ffi.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

// What the recording handler saw in its last call.
struct Seen {
  int stage = -1;
  std::vector<std::string> names;
  std::vector<int> types;
  int64_t i32_value = 0;
  float f32_value = 0;
  double f64_value = 0;
  bool pred_value = false;
  std::string str;
  std::vector<int64_t> array;
  int64_t nested = 0;
  int64_t arg_rank = -1;
  int arg_dtype = -1;
  int64_t run_id = 0;
  int32_t device_ordinal = -1;
};
Seen seen;

XLA_FFI_Error* MakeError(const XLA_FFI_Api* api, const char* message) {
  XLA_FFI_Error_Create_Args e{};
  e.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Error_Create_Args, errc);
  e.message = message;
  e.errc = XLA_FFI_Error_Code_INVALID_ARGUMENT;
  return api->XLA_FFI_Error_Create(&e);
}

bool IsProbe(XLA_FFI_CallFrame* frame) {
  if (frame->extension_start == nullptr ||
      frame->extension_start->type != XLA_FFI_Extension_Metadata) {
    return false;
  }
  auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
  ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
  ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
  return true;
}

// Records the frame, then y = 2 * x (f32).
XLA_FFI_Error* Record(XLA_FFI_CallFrame* frame) {
  if (IsProbe(frame)) return nullptr;
  seen = Seen();
  seen.stage = frame->stage;
  for (int64_t i = 0; i < frame->attrs.size; ++i) {
    const std::string name(frame->attrs.names[i]->ptr, frame->attrs.names[i]->len);
    seen.names.push_back(name);
    seen.types.push_back(frame->attrs.types[i]);
    void* a = frame->attrs.attrs[i];
    if (name == "i") {
      auto* s = static_cast<XLA_FFI_Scalar*>(a);
      if (s->dtype != XLA_FFI_DataType_S32) return MakeError(frame->api, "i is not s32");
      seen.i32_value = *static_cast<int32_t*>(s->value);
    } else if (name == "f") {
      seen.f32_value = *static_cast<float*>(static_cast<XLA_FFI_Scalar*>(a)->value);
    } else if (name == "d") {
      seen.f64_value = *static_cast<double*>(static_cast<XLA_FFI_Scalar*>(a)->value);
    } else if (name == "b") {
      auto* s = static_cast<XLA_FFI_Scalar*>(a);
      if (s->dtype != XLA_FFI_DataType_PRED) return MakeError(frame->api, "b is not pred");
      seen.pred_value = *static_cast<bool*>(s->value);
    } else if (name == "s") {
      auto* span = static_cast<XLA_FFI_ByteSpan*>(a);
      seen.str.assign(span->ptr, span->len);
    } else if (name == "a") {
      auto* arr = static_cast<XLA_FFI_Array*>(a);
      if (arr->dtype != XLA_FFI_DataType_S64) return MakeError(frame->api, "a is not s64[]");
      auto* data = static_cast<int64_t*>(arr->data);
      seen.array.assign(data, data + arr->size);
    } else if (name == "dict") {
      auto* inner = static_cast<XLA_FFI_Attrs*>(a);
      if (inner->size != 1) return MakeError(frame->api, "dict has not one entry");
      seen.nested = *static_cast<int64_t*>(static_cast<XLA_FFI_Scalar*>(inner->attrs[0])->value);
    }
  }
  XLA_FFI_RunId_Get_Args run{};
  run.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_RunId_Get_Args, run_id);
  run.ctx = frame->ctx;
  if (XLA_FFI_Error* e = frame->api->XLA_FFI_RunId_Get(&run)) return e;
  seen.run_id = run.run_id;
  XLA_FFI_DeviceOrdinal_Get_Args ord{};
  ord.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal);
  ord.ctx = frame->ctx;
  if (XLA_FFI_Error* e = frame->api->XLA_FFI_DeviceOrdinal_Get(&ord)) return e;
  seen.device_ordinal = ord.device_ordinal;
  auto* x = static_cast<XLA_FFI_Buffer*>(frame->args.args[0]);
  auto* y = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[0]);
  seen.arg_rank = x->rank;
  seen.arg_dtype = x->dtype;
  int64_t n = 1;
  for (int64_t d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (int64_t i = 0; i < n; ++i) {
    static_cast<float*>(y->data)[i] = 2 * static_cast<const float*>(x->data)[i];
  }
  return nullptr;
}

XLA_FFI_Error* Fail(XLA_FFI_CallFrame* frame) {
  if (IsProbe(frame)) return nullptr;
  return MakeError(frame->api, "no good");
}

// y = x * (float user data of type g_type).
int64_t g_type = 0;
XLA_FFI_Error* Scale(XLA_FFI_CallFrame* frame) {
  if (IsProbe(frame)) return nullptr;
  XLA_FFI_TypeId id{g_type};
  XLA_FFI_ExecutionContext_Get_Args get{};
  get.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_ExecutionContext_Get_Args, data);
  get.ctx = frame->ctx;
  get.type_id = &id;
  if (XLA_FFI_Error* e = frame->api->XLA_FFI_ExecutionContext_Get(&get)) return e;
  const float s = *static_cast<float*>(get.data);
  auto* x = static_cast<XLA_FFI_Buffer*>(frame->args.args[0]);
  auto* y = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[0]);
  for (int64_t i = 0; i < x->dims[0]; ++i) {
    static_cast<float*>(y->data)[i] = s * static_cast<const float*>(x->data)[i];
  }
  return nullptr;
}

// Instantiate makes an int state (7); execute writes it; the state is freed with the kernel.
int deleted = 0;
int64_t g_state_type = 0;
XLA_FFI_Error* Stateful(XLA_FFI_CallFrame* frame) {
  if (IsProbe(frame)) return nullptr;
  XLA_FFI_TypeId id{g_state_type};
  if (frame->stage == XLA_FFI_ExecutionStage_INSTANTIATE) {
    XLA_FFI_State_Set_Args set{};
    set.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_State_Set_Args, state);
    set.ctx = frame->ctx;
    set.type_id = &id;
    set.state = new int(7);
    return frame->api->XLA_FFI_State_Set(&set);
  }
  XLA_FFI_State_Get_Args get{};
  get.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_State_Get_Args, state);
  get.ctx = frame->ctx;
  get.type_id = &id;
  if (XLA_FFI_Error* e = frame->api->XLA_FFI_State_Get(&get)) return e;
  auto* y = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[0]);
  static_cast<int32_t*>(y->data)[0] = *static_cast<int*>(get.state);
  return nullptr;
}

// Completes from another thread through a future.
XLA_FFI_Error* Async(XLA_FFI_CallFrame* frame) {
  if (IsProbe(frame)) return nullptr;
  XLA_FFI_Future_Create_Args create{};
  create.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Future_Create_Args, future);
  if (XLA_FFI_Error* e = frame->api->XLA_FFI_Future_Create(&create)) return e;
  frame->future = create.future;
  auto* y = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[0]);
  const XLA_FFI_Api* api = frame->api;
  XLA_FFI_Future* future = create.future;
  std::thread([api, future, y] {
    static_cast<int32_t*>(y->data)[0] = 42;
    XLA_FFI_Future_SetAvailable_Args done{};
    done.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Future_SetAvailable_Args, future);
    done.future = future;
    XLA_FFI_Error* e = api->XLA_FFI_Future_SetAvailable(&done);
    (void)e;
  }).detach();
  return nullptr;
}

// A custom_call op to `target` with api_version 4 (as an enum, as VHLO gives it).
OpBuilder FfiCall(const std::string& target) {
  OpBuilder b("stablehlo.custom_call");
  b.Attr("call_target_name", ir::Attr::String(target));
  b.Attr("api_version", ir::Attr::Enum("API_VERSION_TYPED_FFI"));
  return b;
}

StatusOr<Kernel> Lower(OpBuilder& b, const std::string& target) {
  FakeLowerContext ctx(b);
  const runtime::FfiHandler* h = runtime::FindFfiHandler(target);
  if (h == nullptr) return NotFound("not registered");
  return kernels::LowerFfiCall(ctx, target, *h);
}

TEST(FfiCallTest, FrameCarriesBuffersAndTypedSortedAttributes) {
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_record", {&Record, nullptr, 0}).ok());
  OpBuilder b = FfiCall("test_record");
  b.Operand(DType::kF32, {2, 2});
  b.Result(DType::kF32, {2, 2});
  ir::Attr elements;
  elements.kind = ir::Attr::Kind::kElements;
  elements.type = ir::Type::Tensor(DType::kS64, {3});
  for (int64_t v : {5, -6, 7}) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    elements.data.insert(elements.data.end(), p, p + 8);
  }
  b.Attr("mhlo.backend_config",
         ir::Attr::Dict({{"s", ir::Attr::String("hello")},
                         {"i", ir::Attr::Int(-3, ir::Type::Tensor(DType::kS32, {}))},
                         {"f", ir::Attr::Float(0.5, ir::Type::Tensor(DType::kF32, {}))},
                         {"d", ir::Attr::Float(0.25)},
                         {"b", ir::Attr::Bool(true)},
                         {"a", elements},
                         {"dict", ir::Attr::Dict({{"k", ir::Attr::Int(9)}})}}));
  StatusOr<Kernel> kernel = Lower(b, "test_record");
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  ExecContext ec;
  ec.device_ordinal = 3;
  ec.run_id = 77;
  StatusOr<std::vector<Array>> out = RunKernel(
      *kernel, b.module(), b.op(), {MakeArray<float>(DType::kF32, {2, 2}, {1, 2, 3, 4})}, ec);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(seen.stage, XLA_FFI_ExecutionStage_EXECUTE);
  EXPECT_EQ(seen.names, (std::vector<std::string>{"a", "b", "d", "dict", "f", "i", "s"}));
  EXPECT_EQ(seen.types, (std::vector<int>{XLA_FFI_AttrType_ARRAY, XLA_FFI_AttrType_SCALAR,
                                          XLA_FFI_AttrType_SCALAR, XLA_FFI_AttrType_DICTIONARY,
                                          XLA_FFI_AttrType_SCALAR, XLA_FFI_AttrType_SCALAR,
                                          XLA_FFI_AttrType_STRING}));
  EXPECT_EQ(seen.i32_value, -3);
  EXPECT_EQ(seen.f32_value, 0.5f);
  EXPECT_EQ(seen.f64_value, 0.25);
  EXPECT_TRUE(seen.pred_value);
  EXPECT_EQ(seen.str, "hello");
  EXPECT_EQ(seen.array, (std::vector<int64_t>{5, -6, 7}));
  EXPECT_EQ(seen.nested, 9);
  EXPECT_EQ(seen.arg_rank, 2);
  EXPECT_EQ(seen.arg_dtype, XLA_FFI_DataType_F32);
  EXPECT_EQ(seen.run_id, 77);
  EXPECT_EQ(seen.device_ordinal, 3);
}

TEST(FfiCallTest, UnsupportedAttributesAndApiVersionsAreCompileErrorsNamingThem) {
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_record", {&Record, nullptr, 0}).ok());
  OpBuilder b = FfiCall("test_record");
  b.Operand(DType::kF32, {2});
  b.Result(DType::kF32, {2});
  b.Attr("mhlo.backend_config",
         ir::Attr::Dict({{"t", ir::Attr::TypeValue(ir::Type::Tensor(DType::kF32, {}))}}));
  StatusOr<Kernel> k = Lower(b, "test_record");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(k.status().message().find("attribute `t`"), std::string::npos) << k.status().message();

  OpBuilder c("stablehlo.custom_call");
  c.Attr("call_target_name", ir::Attr::String("test_record"));
  c.Attr("api_version", ir::Attr::Enum("API_VERSION_STATUS_RETURNING"));
  c.Operand(DType::kF32, {2});
  c.Result(DType::kF32, {2});
  k = Lower(c, "test_record");  // the untyped custom-call API
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("api_version = 4"), std::string::npos);
}

TEST(FfiCallTest, OtherLayoutsAreCopiedInAndOut) {
  // test_record computes y = 2 * x in memory order. With x column-major and y row-major, the
  // handler reads x's column-major memory and writes y's row-major memory from it.
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_record", {&Record, nullptr, 0}).ok());
  OpBuilder d = FfiCall("test_record");
  d.Operand(DType::kF32, {2, 3});
  d.Result(DType::kF32, {2, 3});
  d.Attr("operand_layouts", ir::Attr::Array({IntsAttr({0, 1})}));
  d.Attr("result_layouts", ir::Attr::Array({IntsAttr({1, 0})}));
  StatusOr<Kernel> k = Lower(d, "test_record");
  ASSERT_TRUE(k.ok()) << k.status().message();
  StatusOr<std::vector<Array>> out = RunKernel(
      *k, d.module(), d.op(), {MakeArray<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  // Column-major memory of [[1, 2, 3], [4, 5, 6]] is 1 4 2 5 3 6.
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{2, 8, 4, 10, 6, 12}));

  // Both column-major: the layouts cancel out.
  OpBuilder e = FfiCall("test_record");
  e.Operand(DType::kF32, {2, 3});
  e.Result(DType::kF32, {2, 3});
  e.Attr("operand_layouts", ir::Attr::Array({IntsAttr({0, 1})}));
  e.Attr("result_layouts", ir::Attr::Array({IntsAttr({0, 1})}));
  k = Lower(e, "test_record");
  ASSERT_TRUE(k.ok()) << k.status().message();
  out = RunKernel(*k, e.module(), e.op(),
                  {MakeArray<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{2, 4, 6, 8, 10, 12}));
}

TEST(FfiCallTest, HandlerErrorNamesTheTarget) {
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_fail", {&Fail, nullptr, 0}).ok());
  OpBuilder b = FfiCall("test_fail");
  b.Operand(DType::kF32, {1});
  b.Result(DType::kF32, {1});
  StatusOr<Kernel> kernel = Lower(b, "test_fail");
  ASSERT_TRUE(kernel.ok());
  StatusOr<std::vector<Array>> out =
      RunKernel(*kernel, b.module(), b.op(), {MakeArray<float>(DType::kF32, {1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "FFI handler test_fail failed: no good");
}

TEST(FfiCallTest, UserDataByTypeId) {
  ASSERT_TRUE(runtime::RegisterFfiType("test_scale", &g_type, nullptr).ok());
  EXPECT_GT(g_type, 0);
  int64_t again = 0;
  ASSERT_TRUE(runtime::RegisterFfiType("test_scale", &again, nullptr).ok());
  EXPECT_EQ(again, g_type);
  int64_t wrong = g_type + 1000;
  EXPECT_FALSE(runtime::RegisterFfiType("test_scale", &wrong, nullptr).ok());

  ASSERT_TRUE(runtime::RegisterFfiHandler("test_scale", {&Scale, nullptr, 0}).ok());
  OpBuilder b = FfiCall("test_scale");
  b.Operand(DType::kF32, {3});
  b.Result(DType::kF32, {3});
  StatusOr<Kernel> kernel = Lower(b, "test_scale");
  ASSERT_TRUE(kernel.ok());
  std::vector<Array> in = {MakeArray<float>(DType::kF32, {3}, {1, 2, 3})};
  // No user data: the handler's lookup fails.
  StatusOr<std::vector<Array>> out = RunKernel(*kernel, b.module(), b.op(), in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound) << out.status().message();
  float scale = 1.5f;
  auto data = std::make_shared<runtime::FfiUserData>();
  ASSERT_TRUE(data->Add(g_type, &scale).ok());
  EXPECT_FALSE(data->Add(g_type, &scale).ok());
  ExecContext ec;
  ec.ffi_user_data = data;
  out = RunKernel(*kernel, b.module(), b.op(), in, ec);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{1.5f, 3, 4.5f}));
}

TEST(FfiCallTest, InstantiateStateLivesWithTheKernel) {
  ASSERT_TRUE(runtime::RegisterFfiType("test_state", &g_state_type, [](void* p) {
                ++deleted;
                delete static_cast<int*>(p);
              }).ok());
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_state", {&Stateful, &Stateful, 0}).ok());
  OpBuilder b = FfiCall("test_state");
  b.Result(DType::kS32, {});
  {
    StatusOr<Kernel> kernel = Lower(b, "test_state");
    ASSERT_TRUE(kernel.ok()) << kernel.status().message();
    StatusOr<std::vector<Array>> out = RunKernel(*kernel, b.module(), b.op(), {});
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_EQ(ScalarValue<int32_t>((*out)[0]), 7);
    EXPECT_EQ(deleted, 0);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(FfiCallTest, AsynchronousHandlerIsAwaited) {
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_async", {&Async, nullptr, 0}).ok());
  OpBuilder b = FfiCall("test_async");
  b.Result(DType::kS32, {});
  StatusOr<Kernel> kernel = Lower(b, "test_async");
  ASSERT_TRUE(kernel.ok());
  StatusOr<std::vector<Array>> out = RunKernel(*kernel, b.module(), b.op(), {});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ScalarValue<int32_t>((*out)[0]), 42);
}

TEST(FfiCallTest, RegistryRefusesAnotherHandlerUnderATakenName) {
  ASSERT_TRUE(runtime::RegisterFfiHandler("test_taken", {&Record, nullptr, 0}).ok());
  EXPECT_TRUE(runtime::RegisterFfiHandler("test_taken", {&Record, nullptr, 0}).ok());
  Status s = runtime::RegisterFfiHandler("test_taken", {&Fail, nullptr, 0});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(runtime::RegisterFfiHandler("", {&Record, nullptr, 0}).ok());
  EXPECT_FALSE(runtime::RegisterFfiHandler("test_null", {nullptr, nullptr, 0}).ok());
  EXPECT_TRUE(runtime::IsKilnFfiPlatform("Host"));
  EXPECT_TRUE(runtime::IsKilnFfiPlatform("kiln"));
  EXPECT_FALSE(runtime::IsKilnFfiPlatform("CUDA"));
}

}  // namespace
}  // namespace kiln::testing
