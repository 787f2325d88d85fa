// PJRT_FFI_Extension and PJRT_ExecuteContext_Create / _Destroy (pjrt/ffi_extension.h).
#include "pjrt/ffi_extension.h"

#include <string>
#include <string_view>

#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

namespace kiln::pjrt {
namespace {

std::string_view Span(const char* p, size_t n) {
  return p != nullptr ? std::string_view(p, n) : "";
}

PJRT_Error* TypeRegister(PJRT_FFI_Type_Register_Args* args) {
  static constexpr char kFn[] = "PJRT_FFI_Type_Register";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_FFI_Type_Register_Args, type_id, kFn);
    void (*deleter)(void*) = nullptr;
    if (HasBytes(args, KILN_FIELD_END(PJRT_FFI_Type_Register_Args, type_info)) &&
        args->type_info != nullptr) {
      deleter = args->type_info->deleter;
    }
    return runtime::RegisterFfiType(Span(args->type_name, args->type_name_size), &args->type_id,
                                    deleter)
        .WithContext(kFn);
  });
}

PJRT_Error* UserDataAdd(PJRT_FFI_UserData_Add_Args* args) {
  static constexpr char kFn[] = "PJRT_FFI_UserData_Add";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_FFI_UserData_Add_Args, user_data, kFn);
    KILN_CHECK_NOT_NULL(args->context, kFn);
    return args->context->user_data->Add(args->user_data.type_id, args->user_data.data)
        .WithContext(kFn);
  });
}

PJRT_Error* RegisterHandler(PJRT_FFI_Register_Handler_Args* args) {
  static constexpr char kFn[] = "PJRT_FFI_Register_Handler";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_FFI_Register_Handler_Args, traits, kFn);
    KILN_CHECK_NOT_NULL(args->handler, kFn);
    const std::string_view platform = Span(args->platform_name, args->platform_name_size);
    if (!runtime::IsKilnFfiPlatform(platform)) {
      return InvalidArgument(Prefix(kFn) +
                             "Kiln runs FFI handlers registered for platform kiln "
                             "(or Host / cpu), not \"" +
                             std::string(platform) + "\"");
    }
    runtime::FfiHandler h;
    h.execute = reinterpret_cast<XLA_FFI_Handler*>(args->handler);
    h.traits = args->traits;
    return runtime::RegisterFfiHandler(Span(args->target_name, args->target_name_size), h)
        .WithContext(kFn);
  });
}

}  // namespace

PJRT_FFI_Extension MakeFfiExtension(PJRT_Extension_Base* next) {
  PJRT_FFI_Extension ext{};
  ext.base.struct_size = PJRT_FFI_Extension_STRUCT_SIZE;
  ext.base.type = PJRT_Extension_Type_FFI;
  ext.base.next = next;
  ext.type_register = &TypeRegister;
  ext.user_data_add = &UserDataAdd;
  ext.register_handler = &RegisterHandler;
  return ext;
}

PJRT_Error* ExecuteContext_Create(PJRT_ExecuteContext_Create_Args* args) {
  static constexpr char kFn[] = "PJRT_ExecuteContext_Create";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_ExecuteContext_Create_Args, context, kFn);
    args->context = new PJRT_ExecuteContext();
    return Status::Ok();
  });
}

PJRT_Error* ExecuteContext_Destroy(PJRT_ExecuteContext_Destroy_Args* args) {
  static constexpr char kFn[] = "PJRT_ExecuteContext_Destroy";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_ExecuteContext_Destroy_Args, context, kFn);
    delete args->context;  // runs still in flight keep the user data table alive
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
