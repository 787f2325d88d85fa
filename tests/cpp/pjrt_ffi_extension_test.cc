// The PJRT FFI extension and PJRT_ExecuteContext (pjrt/ffi_extension.cc): found on the extension
// chain; registrations and user data checked, with errors for malformed arguments.
#include "abi/pjrt_ffi_extension.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "abi/pjrt_c_api.h"
#include "abi/xla_ffi_api.h"
#include "pjrt/args_check.h"
#include "tests/cpp/pjrt_test_util.h"

namespace kiln::pjrt_test {
namespace {

const PJRT_FFI_Extension* Ffi() {
  for (const PJRT_Extension_Base* e = GetPjrtApi()->extension_start; e != nullptr; e = e->next) {
    // Kiln's own extension has a type outside the enum: read it as an int.
    if (pjrt::RawEnum(e->type) == PJRT_Extension_Type_FFI) {
      return reinterpret_cast<const PJRT_FFI_Extension*>(e);
    }
  }
  return nullptr;
}

XLA_FFI_Error* Noop(XLA_FFI_CallFrame* frame) {
  if (frame->extension_start != nullptr &&
      frame->extension_start->type == XLA_FFI_Extension_Metadata) {
    auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
    ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
    ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
  }
  return nullptr;
}

// Claims an FFI API major version Kiln does not serve.
XLA_FFI_Error* FromTheFuture(XLA_FFI_CallFrame* frame) {
  if (frame->extension_start != nullptr &&
      frame->extension_start->type == XLA_FFI_Extension_Metadata) {
    auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
    ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR + 1;
  }
  return nullptr;
}

Outcome Register(const char* name, void* handler, const char* platform, size_t size = 0) {
  PJRT_FFI_Register_Handler_Args args{};
  args.struct_size = size != 0 ? size : size_t{PJRT_FFI_Register_Handler_Args_STRUCT_SIZE};
  args.target_name = name;
  args.target_name_size = std::strlen(name);
  args.handler = handler;
  args.platform_name = platform;
  args.platform_name_size = std::strlen(platform);
  return Take(Ffi()->register_handler(&args));
}

TEST(PjrtFfiExtensionTest, IsOnTheChainWithEveryFunction) {
  const PJRT_FFI_Extension* ext = Ffi();
  ASSERT_NE(ext, nullptr);
  EXPECT_EQ(ext->base.struct_size, PJRT_FFI_Extension_STRUCT_SIZE);
  EXPECT_NE(ext->type_register, nullptr);
  EXPECT_NE(ext->user_data_add, nullptr);
  EXPECT_NE(ext->register_handler, nullptr);
}

TEST(PjrtFfiExtensionTest, RegisterHandlerChecksItsArguments) {
  ASSERT_NE(Ffi(), nullptr);
  void* noop = reinterpret_cast<void*>(&Noop);
  EXPECT_TRUE(Register("pjrt_test_noop", noop, "kiln").ok());
  EXPECT_TRUE(Register("pjrt_test_noop", noop, "Host").ok());  // the same handler again
  Outcome o = Register("pjrt_test_noop", reinterpret_cast<void*>(&FromTheFuture), "kiln");
  EXPECT_EQ(o.code, PJRT_Error_Code_ALREADY_EXISTS) << o.message;
  o = Register("pjrt_test_cuda", noop, "CUDA");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("CUDA"), std::string::npos) << o.message;
  o = Register("pjrt_test_null", nullptr, "kiln");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  o = Register("pjrt_test_small", noop, "kiln", 16);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  o = Register("pjrt_test_future", reinterpret_cast<void*>(&FromTheFuture), "kiln");
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION);
  EXPECT_NE(o.message.find("XLA FFI API"), std::string::npos) << o.message;
  EXPECT_EQ(Take(Ffi()->register_handler(nullptr)).code, PJRT_Error_Code_INVALID_ARGUMENT);
}

TEST(PjrtFfiExtensionTest, TypeIdsAreAssignedOncePerName) {
  ASSERT_NE(Ffi(), nullptr);
  PJRT_FFI_Type_Register_Args args{};
  args.struct_size = PJRT_FFI_Type_Register_Args_STRUCT_SIZE;
  args.type_name = "pjrt_test_type";
  args.type_name_size = std::strlen(args.type_name);
  ASSERT_TRUE(Take(Ffi()->type_register(&args)).ok());
  const int64_t id = args.type_id;
  EXPECT_GT(id, 0);
  args.type_id = 0;
  ASSERT_TRUE(Take(Ffi()->type_register(&args)).ok());
  EXPECT_EQ(args.type_id, id);
  args.type_id = id + 100;
  EXPECT_EQ(Take(Ffi()->type_register(&args)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  args.type_name = "pjrt_test_other";
  args.type_name_size = std::strlen(args.type_name);
  args.type_id = id;  // another name cannot take it
  EXPECT_EQ(Take(Ffi()->type_register(&args)).code, PJRT_Error_Code_ALREADY_EXISTS);
}

TEST(PjrtFfiExtensionTest, ExecuteContextHoldsUserDataOncePerType) {
  ASSERT_NE(Ffi(), nullptr);
  PJRT_ExecuteContext_Create_Args create{};
  create.struct_size = PJRT_ExecuteContext_Create_Args_STRUCT_SIZE;
  ASSERT_TRUE(Take(GetPjrtApi()->PJRT_ExecuteContext_Create(&create)).ok());
  ASSERT_NE(create.context, nullptr);
  int value = 1;
  PJRT_FFI_UserData_Add_Args add{};
  add.struct_size = PJRT_FFI_UserData_Add_Args_STRUCT_SIZE;
  add.context = create.context;
  add.user_data.type_id = 12345;
  add.user_data.data = &value;
  EXPECT_TRUE(Take(Ffi()->user_data_add(&add)).ok());
  EXPECT_EQ(Take(Ffi()->user_data_add(&add)).code, PJRT_Error_Code_ALREADY_EXISTS);
  add.context = nullptr;
  EXPECT_EQ(Take(Ffi()->user_data_add(&add)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  PJRT_ExecuteContext_Destroy_Args destroy{};
  destroy.struct_size = PJRT_ExecuteContext_Destroy_Args_STRUCT_SIZE;
  destroy.context = create.context;
  EXPECT_TRUE(Take(GetPjrtApi()->PJRT_ExecuteContext_Destroy(&destroy)).ok());
  EXPECT_EQ(Take(GetPjrtApi()->PJRT_ExecuteContext_Create(nullptr)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kiln::pjrt_test
