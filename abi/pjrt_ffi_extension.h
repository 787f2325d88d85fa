/* The PJRT FFI extension (PJRT_Extension_Type_FFI) at C API 0.114: a client registers XLA FFI
 * handlers and user types with the plugin, and attaches user data to a PJRT_ExecuteContext that it
 * passes in PJRT_ExecuteOptions::context; handlers read it with XLA_FFI_ExecutionContext_Get.
 * jaxlib creates an ExecuteContext for each execution only when this extension is present.
 * Layout written from the published C declaration (the argument structs' sizes also tell an older
 * layout apart: see pjrt/ffi_extension.cc). */
#ifndef KILN_ABI_PJRT_FFI_EXTENSION_H_
#define KILN_ABI_PJRT_FFI_EXTENSION_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct PJRT_FFI_Type_Info {
  void (*deleter)(void* object);
  void (*serialize)(void);   /* not used by Kiln */
  void (*deserialize)(void); /* not used by Kiln */
} PJRT_FFI_Type_Info;

typedef struct PJRT_FFI_Type_Register_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* type_name;
  size_t type_name_size;
  int64_t type_id; /* in-out: 0 asks for a new id */
  const PJRT_FFI_Type_Info* type_info;
} PJRT_FFI_Type_Register_Args;
PJRT_STRUCT_TRAITS(PJRT_FFI_Type_Register_Args, type_info);

typedef struct PJRT_FFI_UserData {
  int64_t type_id;
  void* data;
} PJRT_FFI_UserData;

typedef struct PJRT_FFI_UserData_Add_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_ExecuteContext* context;
  PJRT_FFI_UserData user_data;
} PJRT_FFI_UserData_Add_Args;
PJRT_STRUCT_TRAITS(PJRT_FFI_UserData_Add_Args, user_data);

typedef struct PJRT_FFI_Register_Handler_Args {
  size_t struct_size;
  const char* target_name;
  size_t target_name_size;
  void* handler; /* an XLA_FFI_Handler* (typed FFI) */
  const char* platform_name;
  size_t platform_name_size;
  uint32_t traits;
} PJRT_FFI_Register_Handler_Args;
PJRT_STRUCT_TRAITS(PJRT_FFI_Register_Handler_Args, traits);

typedef PJRT_Error* PJRT_FFI_Type_Register(PJRT_FFI_Type_Register_Args* args);
typedef PJRT_Error* PJRT_FFI_UserData_Add(PJRT_FFI_UserData_Add_Args* args);
typedef PJRT_Error* PJRT_FFI_Register_Handler(PJRT_FFI_Register_Handler_Args* args);

typedef struct PJRT_FFI_Extension {
  PJRT_Extension_Base base; /* type = PJRT_Extension_Type_FFI */
  PJRT_FFI_Type_Register* type_register;
  PJRT_FFI_UserData_Add* user_data_add;
  PJRT_FFI_Register_Handler* register_handler;
} PJRT_FFI_Extension;
PJRT_STRUCT_TRAITS(PJRT_FFI_Extension, register_handler);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_PJRT_FFI_EXTENSION_H_ */
