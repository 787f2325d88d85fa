/* Kiln: PJRT C API declarations, API version 0.114.
 *
 * Written for Kiln from the published ABI facts (type names, field order,
 * enum ordinals, slot order of PJRT_Api).  Names and layouts must match the
 * upstream header exactly, because the framework (jaxlib) and the plugin are
 * compiled separately and meet only through this binary interface.
 *
 * The struct_size contract
 * ------------------------
 * Every argument struct begins with `size_t struct_size` and
 * `PJRT_Extension_Base* extension_start`.  The caller always fills
 * struct_size with the size *it* was compiled against (the constant
 * <Type>_STRUCT_SIZE = offset of the last field + its size, i.e. without
 * trailing padding).  New fields are only ever appended, so:
 *   - an implementation must accept a smaller struct_size (older caller) and
 *     treat the missing trailing fields as absent / defaulted;
 *   - it must accept a larger struct_size (newer caller) and ignore the
 *     fields it does not know;
 *   - it must never read or write past the caller's struct_size (e.g.
 *     jaxlib 0.10.2 passes 185 for PJRT_Device_MemoryStats_Args, which ends
 *     before the 0.113 peak_allocated_bytes fields).
 * extension_start heads an optional singly linked chain of
 * PJRT_Extension_Base records; unknown entries must be skipped.
 *
 * Errors: a NULL PJRT_Error* return means success.  Any non-NULL error is
 * owned by the caller and released with PJRT_Error_Destroy.
 */
#ifndef KILN_ABI_PJRT_C_API_H_
#define KILN_ABI_PJRT_C_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- helpers */

/* Bytes up to and including `last_field` (no trailing padding). */
#define PJRT_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* Compile-time assertion usable from both C11 and C++. */
#ifdef __cplusplus
#define PJRT_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#define PJRT_ABI_ALIGNOF(type) alignof(type)
#else
#define PJRT_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#define PJRT_ABI_ALIGNOF(type) _Alignof(type)
#endif

/* Declares <type>_STRUCT_SIZE and checks that `last_field` really is the
 * last member (sizeof == struct size rounded up to the alignment).  Use after
 * the struct definition, followed by a semicolon. */
#define PJRT_STRUCT_TRAITS(type, last_field)                                 \
  enum { type##_STRUCT_SIZE = PJRT_STRUCT_SIZE(type, last_field) };          \
  PJRT_ABI_ASSERT(sizeof(type) ==                                            \
                      (PJRT_STRUCT_SIZE(type, last_field) +                  \
                       PJRT_ABI_ALIGNOF(type) - 1) /                         \
                          PJRT_ABI_ALIGNOF(type) * PJRT_ABI_ALIGNOF(type),   \
                  #type ": last_field is not the last member")

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#ifndef PJRT_API_MAJOR
#define PJRT_API_MAJOR 0 /* bumped on ABI-breaking changes */
#endif
#ifndef PJRT_API_MINOR
#define PJRT_API_MINOR 114 /* bumped when fields/slots are appended */
#endif

/* ------------------------------------------------------------- extensions */

/* Tag of an extension record in an extension_start chain (ordinals fixed). */
typedef enum {
  PJRT_Extension_Type_Gpu_Custom_Call = 0,
  PJRT_Extension_Type_Profiler = 1,
  PJRT_Extension_Type_Custom_Partitioner = 2,
  PJRT_Extension_Type_Stream = 3,
  PJRT_Extension_Type_Layouts = 4,
  PJRT_Extension_Type_FFI = 5,
  PJRT_Extension_Type_MemoryDescriptions = 6,
  PJRT_Extension_Type_Triton = 7,
  PJRT_Extension_Type_RawBuffer = 8,    /* experimental */
  PJRT_Extension_Type_PhaseCompile = 9, /* experimental */
  PJRT_Extension_Type_Example = 10,
  PJRT_Extension_Type_Unknown = 11,
  PJRT_Extension_Type_CrossHostTransfers = 12,
  PJRT_Extension_Type_ExecutableMetadata = 13,
  PJRT_Extension_Type_Callback = 14,
  PJRT_Extension_Type_HostAllocator = 15, /* deprecated */
  PJRT_Extension_Type_TpuTopology = 16,
  PJRT_Extension_Type_TpuExecutable = 17,
  PJRT_Extension_Type_Megascale = 18,
  PJRT_Extension_Type_Shardings = 19,
  PJRT_Extension_Type_AbiVersion = 20,
  PJRT_Extension_Type_Collectives = 21,
  PJRT_Extension_Type_MultiSlice = 22,
  PJRT_Extension_Type_HostMemoryAllocator = 23,
  PJRT_Extension_Type_XlaTransform = 24
} PJRT_Extension_Type;

/* Common prefix of every extension record; `next` links the chain. */
typedef struct PJRT_Extension_Base {
  size_t struct_size;
  PJRT_Extension_Type type;
  struct PJRT_Extension_Base* next;
} PJRT_Extension_Base;
PJRT_STRUCT_TRAITS(PJRT_Extension_Base, next);

/* Version the plugin reports in PJRT_Api.pjrt_api_version. */
typedef struct PJRT_Api_Version {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  int major_version; /* out: PJRT_API_MAJOR */
  int minor_version; /* out: PJRT_API_MINOR */
} PJRT_Api_Version;
PJRT_STRUCT_TRAITS(PJRT_Api_Version, minor_version);

/* ----------------------------------------------------------------- errors */

typedef struct PJRT_Error PJRT_Error;

typedef struct PJRT_Error_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Error* error; /* may be NULL */
} PJRT_Error_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Error_Destroy_Args, error);
/* Releases `error`.  Note: returns void. */
typedef void PJRT_Error_Destroy(PJRT_Error_Destroy_Args* args);

typedef struct PJRT_Error_Message_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  const char* message; /* out; lives as long as `error` */
  size_t message_size; /* out */
} PJRT_Error_Message_Args;
PJRT_STRUCT_TRAITS(PJRT_Error_Message_Args, message_size);
/* Human-readable text of `error`.  Note: returns void. */
typedef void PJRT_Error_Message(PJRT_Error_Message_Args* args);

/* Status codes; same numbering as absl::StatusCode. */
typedef enum {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16
} PJRT_Error_Code;

/* Called once per (key, value) payload attached to an error. */
typedef void (*PJRT_Error_PayloadVisitor)(const char* key, size_t key_size,
                                          const char* value,
                                          size_t value_size, void* user_arg);

/* Per-implementation operations on an error object (since 0.107). */
typedef struct PJRT_Error_FunctionTable {
  size_t struct_size;
  size_t instance_size; /* sizeof the implementation's error object */
  PJRT_Extension_Base* extension_start;
  void (*destroy)(PJRT_Error* error);
  void (*message)(const PJRT_Error* error, const char** message,
                  size_t* message_size);
  PJRT_Error_Code (*get_code)(const PJRT_Error* error);
  void (*for_each_payload)(const PJRT_Error* error,
                           PJRT_Error_PayloadVisitor visitor, void* user_arg);
} PJRT_Error_FunctionTable;
PJRT_STRUCT_TRAITS(PJRT_Error_FunctionTable, for_each_payload);

/* An error is any object whose first word points at its function table.
 * Implementations embed this as their first member. */
struct PJRT_Error {
  const struct PJRT_Error_FunctionTable* vtable;
};
PJRT_STRUCT_TRAITS(PJRT_Error, vtable);

typedef struct PJRT_Error_GetCode_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_Code code; /* out */
} PJRT_Error_GetCode_Args;
PJRT_STRUCT_TRAITS(PJRT_Error_GetCode_Args, code);
typedef PJRT_Error* PJRT_Error_GetCode(PJRT_Error_GetCode_Args* args);

typedef struct PJRT_Error_ForEachPayload_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_PayloadVisitor visitor;
  void* user_arg; /* handed to `visitor` */
} PJRT_Error_ForEachPayload_Args;
PJRT_STRUCT_TRAITS(PJRT_Error_ForEachPayload_Args, user_arg);
/* Visits every payload of `error` (since 0.99; frameworks call it on every
 * error they convert, so it must exist and succeed). */
typedef PJRT_Error* PJRT_Error_ForEachPayload(
    PJRT_Error_ForEachPayload_Args* args);

/* Given by the implementation to caller-supplied callbacks so they can build
 * an error; `message` must be copied. */
typedef PJRT_Error* (*PJRT_CallbackError)(PJRT_Error_Code code,
                                          const char* message,
                                          size_t message_size);

/* ----------------------------------------------------------- named values */

typedef enum {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3, /* 32-bit */
  PJRT_NamedValue_kBool = 4
} PJRT_NamedValue_Type;

/* A key/value pair (options, attributes). */
typedef struct PJRT_NamedValue {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size; /* element count for strings/lists, 1 for scalars */
} PJRT_NamedValue;
PJRT_STRUCT_TRAITS(PJRT_NamedValue, value_size);

/* ----------------------------------------------------------------- plugin */

typedef struct PJRT_Plugin_Initialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
} PJRT_Plugin_Initialize_Args;
PJRT_STRUCT_TRAITS(PJRT_Plugin_Initialize_Args, extension_start);
/* One-time setup, before any other call. */
typedef PJRT_Error* PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args* args);

typedef struct PJRT_Plugin_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* attributes; /* out; process lifetime */
  size_t num_attributes;             /* out */
} PJRT_Plugin_Attributes_Args;
PJRT_STRUCT_TRAITS(PJRT_Plugin_Attributes_Args, num_attributes);
typedef PJRT_Error* PJRT_Plugin_Attributes(PJRT_Plugin_Attributes_Args* args);

/* ----------------------------------------------------------------- events */

/* Completion signal for asynchronous work, carrying an error status.  The
 * caller destroys events it receives. */
typedef struct PJRT_Event PJRT_Event;

typedef struct PJRT_Event_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_Destroy_Args, event);
typedef PJRT_Error* PJRT_Event_Destroy(PJRT_Event_Destroy_Args* args);

typedef struct PJRT_Event_IsReady_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  bool is_ready; /* out */
} PJRT_Event_IsReady_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_IsReady_Args, is_ready);
typedef PJRT_Error* PJRT_Event_IsReady(PJRT_Event_IsReady_Args* args);

typedef struct PJRT_Event_Error_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Error_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_Error_Args, event);
/* Status of a ready event, returned as a fresh error (NULL = ok). */
typedef PJRT_Error* PJRT_Event_Error(PJRT_Event_Error_Args* args);

typedef struct PJRT_Event_Await_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Await_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_Await_Args, event);
/* Blocks until ready; returns the event's status. */
typedef PJRT_Error* PJRT_Event_Await(PJRT_Event_Await_Args* args);

/* Receives ownership of `error` (may be NULL). */
typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error* error, void* user_arg);

typedef struct PJRT_Event_OnReady_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  PJRT_Event_OnReadyCallback callback;
  void* user_arg;
} PJRT_Event_OnReady_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_OnReady_Args, user_arg);
typedef PJRT_Error* PJRT_Event_OnReady(PJRT_Event_OnReady_Args* args);

typedef struct PJRT_Event_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event; /* out: an unset event */
} PJRT_Event_Create_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_Create_Args, event);
typedef PJRT_Error* PJRT_Event_Create(PJRT_Event_Create_Args* args);

typedef struct PJRT_Event_Set_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;          /* from PJRT_Event_Create */
  PJRT_Error_Code error_code; /* OK, or the failure to signal */
  const char* error_message;  /* copied; caller keeps ownership */
  size_t error_message_size;
} PJRT_Event_Set_Args;
PJRT_STRUCT_TRAITS(PJRT_Event_Set_Args, error_message_size);
typedef PJRT_Error* PJRT_Event_Set(PJRT_Event_Set_Args* args);

/* ---------------------------------------------------------------- handles */

/* Opaque to the framework; each plugin defines these types privately. */
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_TopologyDescription PJRT_TopologyDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_ShapeSpec PJRT_ShapeSpec;
typedef struct PJRT_FulfillAliasBufferCallback PJRT_FulfillAliasBufferCallback;
typedef struct PJRT_AsyncHostToDeviceTransferManager
    PJRT_AsyncHostToDeviceTransferManager;
typedef struct PJRT_PhaseCompiler PJRT_PhaseCompiler;
typedef struct PJRT_CopyToDeviceStream PJRT_CopyToDeviceStream;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_AsyncTrackingEvent PJRT_AsyncTrackingEvent;

/* PJRT_Memory is NOT opaque (since 0.105): its first word is a function
 * table pointer (or NULL) that frameworks read for per-memory user data. */
typedef struct PJRT_Memory PJRT_Memory;

typedef struct PJRT_Memory_FunctionTable {
  size_t struct_size;
  struct PJRT_Extension_Base* extension_start;
  size_t instance_struct_size; /* PJRT_Memory_STRUCT_SIZE */
  void* (*get_user_data)(struct PJRT_Memory* memory, const void* key);
  void (*set_user_data)(struct PJRT_Memory* memory, const void* key,
                        void* data, void (*dtor)(void*));
} PJRT_Memory_FunctionTable;
PJRT_STRUCT_TRAITS(PJRT_Memory_FunctionTable, set_user_data);

struct PJRT_Memory {
  const struct PJRT_Memory_FunctionTable* vtable;
};
PJRT_STRUCT_TRAITS(PJRT_Memory, vtable);

/* ------------------------------------------------- key-value store hooks */

/* Optional cross-process KV store offered by the caller of
 * PJRT_Client_Create.  Callbacks are thread-safe; Get blocks. */

/* Frees a value returned by the get callback. */
typedef void (*PJRT_KeyValueGetCallback_ValueDeleter)(char* value);

typedef struct PJRT_KeyValueGetCallback_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* key;
  size_t key_size;
  int timeout_in_ms;
  PJRT_CallbackError* callback_error;
  void* user_arg;
  char* value;       /* out */
  size_t value_size; /* out */
  PJRT_KeyValueGetCallback_ValueDeleter value_deleter_callback; /* out */
} PJRT_KeyValueGetCallback_Args;
PJRT_STRUCT_TRAITS(PJRT_KeyValueGetCallback_Args, value_deleter_callback);
typedef PJRT_Error* (*PJRT_KeyValueGetCallback)(
    PJRT_KeyValueGetCallback_Args* args);

typedef void (*PJRT_KeyValueTryGetCallback_ValueDeleter)(char* value);

/* Non-blocking variant: NOT_FOUND when the key is absent. */
typedef struct PJRT_KeyValueTryGetCallback_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* key;
  size_t key_size;
  PJRT_CallbackError* callback_error;
  void* user_arg;
  char* value;       /* out */
  size_t value_size; /* out */
  PJRT_KeyValueTryGetCallback_ValueDeleter value_deleter_callback; /* out */
} PJRT_KeyValueTryGetCallback_Args;
PJRT_STRUCT_TRAITS(PJRT_KeyValueTryGetCallback_Args, value_deleter_callback);
typedef PJRT_Error* (*PJRT_KeyValueTryGetCallback)(
    PJRT_KeyValueTryGetCallback_Args* args);

typedef struct PJRT_KeyValuePutCallback_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* key;
  size_t key_size;
  const char* value; /* valid only during the call */
  size_t value_size;
  PJRT_CallbackError* callback_error;
  void* user_arg;
} PJRT_KeyValuePutCallback_Args;
PJRT_STRUCT_TRAITS(PJRT_KeyValuePutCallback_Args, user_arg);
typedef PJRT_Error* (*PJRT_KeyValuePutCallback)(
    PJRT_KeyValuePutCallback_Args* args);

/* ----------------------------------------------------------------- client */

typedef struct PJRT_Client_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* create_options; /* plugin-specific options */
  size_t num_options;
  PJRT_KeyValueGetCallback kv_get_callback;
  void* kv_get_user_arg;
  PJRT_KeyValuePutCallback kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client; /* out */
  PJRT_KeyValueTryGetCallback kv_try_get_callback;
  void* kv_try_get_user_arg;
} PJRT_Client_Create_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_Create_Args, kv_try_get_user_arg);
typedef PJRT_Error* PJRT_Client_Create(PJRT_Client_Create_Args* args);

typedef struct PJRT_Client_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client; /* may be NULL */
} PJRT_Client_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_Destroy_Args, client);
typedef PJRT_Error* PJRT_Client_Destroy(PJRT_Client_Destroy_Args* args);

typedef struct PJRT_Client_PlatformName_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_name; /* out; owned by client */
  size_t platform_name_size; /* out */
} PJRT_Client_PlatformName_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_PlatformName_Args, platform_name_size);
typedef PJRT_Error* PJRT_Client_PlatformName(
    PJRT_Client_PlatformName_Args* args);

typedef struct PJRT_Client_ProcessIndex_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int process_index; /* out */
} PJRT_Client_ProcessIndex_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_ProcessIndex_Args, process_index);
typedef PJRT_Error* PJRT_Client_ProcessIndex(
    PJRT_Client_ProcessIndex_Args* args);

typedef struct PJRT_Client_PlatformVersion_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_version; /* out; owned by client */
  size_t platform_version_size; /* out */
} PJRT_Client_PlatformVersion_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_PlatformVersion_Args, platform_version_size);
typedef PJRT_Error* PJRT_Client_PlatformVersion(
    PJRT_Client_PlatformVersion_Args* args);

typedef struct PJRT_Client_TopologyDescription_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_TopologyDescription* topology; /* out; owned by client */
} PJRT_Client_TopologyDescription_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_TopologyDescription_Args, topology);
typedef PJRT_Error* PJRT_Client_TopologyDescription(
    PJRT_Client_TopologyDescription_Args* args);

typedef struct PJRT_Client_Devices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* devices; /* out: all devices */
  size_t num_devices;          /* out */
} PJRT_Client_Devices_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_Devices_Args, num_devices);
typedef PJRT_Error* PJRT_Client_Devices(PJRT_Client_Devices_Args* args);

typedef struct PJRT_Client_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* addressable_devices; /* out */
  size_t num_addressable_devices;          /* out */
} PJRT_Client_AddressableDevices_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_AddressableDevices_Args,
                   num_addressable_devices);
typedef PJRT_Error* PJRT_Client_AddressableDevices(
    PJRT_Client_AddressableDevices_Args* args);

typedef struct PJRT_Client_LookupDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int id;              /* global device id */
  PJRT_Device* device; /* out */
} PJRT_Client_LookupDevice_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_LookupDevice_Args, device);
typedef PJRT_Error* PJRT_Client_LookupDevice(
    PJRT_Client_LookupDevice_Args* args);

typedef struct PJRT_Client_LookupAddressableDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int local_hardware_id;
  PJRT_Device* addressable_device; /* out */
} PJRT_Client_LookupAddressableDevice_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_LookupAddressableDevice_Args,
                   addressable_device);
typedef PJRT_Error* PJRT_Client_LookupAddressableDevice(
    PJRT_Client_LookupAddressableDevice_Args* args);

/* Health of a peer process, as reported by the framework. */
typedef enum {
  PJRT_ProcessState_kUnspecified = 0,
  PJRT_ProcessState_kUninitialized = 1,
  PJRT_ProcessState_kDisconnected = 2,
  PJRT_ProcessState_kConnected = 3,
  PJRT_ProcessState_kError = 4
} PJRT_ProcessState;

/* Note: no extension_start in this struct. */
typedef struct PJRT_ProcessInfo {
  size_t struct_size;
  int task_id;
  uint64_t incarnation_id;
  PJRT_ProcessState state;
  int error_code;
  const char* error_message;
  size_t error_message_size;
} PJRT_ProcessInfo;
PJRT_STRUCT_TRAITS(PJRT_ProcessInfo, error_message_size);

typedef struct PJRT_Client_UpdateGlobalProcessInfo_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_ProcessInfo* process_infos;
  size_t num_process_infos;
} PJRT_Client_UpdateGlobalProcessInfo_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_UpdateGlobalProcessInfo_Args,
                   num_process_infos);
typedef PJRT_Error* PJRT_Client_UpdateGlobalProcessInfo(
    PJRT_Client_UpdateGlobalProcessInfo_Args* args);

typedef struct PJRT_Client_AddressableMemories_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Memory* const* addressable_memories; /* out */
  size_t num_addressable_memories;          /* out */
} PJRT_Client_AddressableMemories_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_AddressableMemories_Args,
                   num_addressable_memories);
typedef PJRT_Error* PJRT_Client_AddressableMemories(
    PJRT_Client_AddressableMemories_Args* args);

/* A program to compile: `format` is e.g. "mlir" or "hlo". */
typedef struct PJRT_Program {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  char* code; /* input for compile; output for OptimizedProgram */
  size_t code_size;
  const char* format;
  size_t format_size;
} PJRT_Program;
PJRT_STRUCT_TRAITS(PJRT_Program, format_size);

typedef struct PJRT_Client_Compile_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options; /* serialized xla.CompileOptionsProto */
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable; /* out */
} PJRT_Client_Compile_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_Compile_Args, executable);
typedef PJRT_Error* PJRT_Client_Compile(PJRT_Client_Compile_Args* args);

typedef struct PJRT_Client_Load_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Executable* executable; /* unloaded, e.g. from PJRT_Compile */
  const char* compile_options;
  size_t compile_options_size;
  PJRT_LoadedExecutable* loaded_executable; /* out */
} PJRT_Client_Load_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_Load_Args, loaded_executable);
typedef PJRT_Error* PJRT_Client_Load(PJRT_Client_Load_Args* args);

typedef struct PJRT_Client_DefaultDeviceAssignment_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int num_replicas;
  int num_partitions;
  size_t default_assignment_size; /* capacity of default_assignment */
  int* default_assignment;        /* caller array, filled by callee */
} PJRT_Client_DefaultDeviceAssignment_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_DefaultDeviceAssignment_Args,
                   default_assignment);
typedef PJRT_Error* PJRT_Client_DefaultDeviceAssignment(
    PJRT_Client_DefaultDeviceAssignment_Args* args);

typedef struct PJRT_Client_DmaMap_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  void* data;
  size_t size;
} PJRT_Client_DmaMap_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_DmaMap_Args, size);
typedef PJRT_Error* PJRT_Client_DmaMap(PJRT_Client_DmaMap_Args* args);

typedef struct PJRT_Client_DmaUnmap_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  void* data;
} PJRT_Client_DmaUnmap_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_DmaUnmap_Args, data);
typedef PJRT_Error* PJRT_Client_DmaUnmap(PJRT_Client_DmaUnmap_Args* args);

/* --------------------------------------- async host-to-device transfers */

typedef struct PJRT_AsyncHostToDeviceTransferManager_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
} PJRT_AsyncHostToDeviceTransferManager_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_Destroy_Args,
                   transfer_manager);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_Destroy(
    PJRT_AsyncHostToDeviceTransferManager_Destroy_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_TransferData_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  int buffer_index;
  const void* data;
  int64_t offset;
  int64_t transfer_size;
  bool is_last_transfer;
  PJRT_Event* done_with_h2d_transfer; /* out */
} PJRT_AsyncHostToDeviceTransferManager_TransferData_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_TransferData_Args,
                   done_with_h2d_transfer);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_TransferData(
    PJRT_AsyncHostToDeviceTransferManager_TransferData_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  int buffer_index;
  PJRT_Buffer* buffer_out; /* out */
} PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args,
                   buffer_out);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(
    PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_Device_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  PJRT_Device* device_out; /* out */
} PJRT_AsyncHostToDeviceTransferManager_Device_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_Device_Args,
                   device_out);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_Device(
    PJRT_AsyncHostToDeviceTransferManager_Device_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  size_t buffer_count; /* out */
} PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args,
                   buffer_count);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_BufferCount(
    PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  int buffer_index;
  size_t buffer_size; /* out */
} PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args,
                   buffer_size);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_BufferSize(
    PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  int buffer_index;
  PJRT_Error_Code error_code;
  const char* error_message;
  size_t error_message_size;
} PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args,
                   error_message_size);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_SetBufferError(
    PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args* args);

typedef struct PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  const PJRT_NamedValue* transfer_metadata;
  size_t num_metadata;
} PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args,
                   num_metadata);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_AddMetadata(
    PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args* args);

/* ------------------------------------------------------------ data types */

/* Element types.  NOTE: numbering differs from xla::PrimitiveType. */
typedef enum {
  PJRT_Buffer_Type_INVALID = 0,
  PJRT_Buffer_Type_PRED = 1,
  PJRT_Buffer_Type_S8 = 2,
  PJRT_Buffer_Type_S16 = 3,
  PJRT_Buffer_Type_S32 = 4,
  PJRT_Buffer_Type_S64 = 5,
  PJRT_Buffer_Type_U8 = 6,
  PJRT_Buffer_Type_U16 = 7,
  PJRT_Buffer_Type_U32 = 8,
  PJRT_Buffer_Type_U64 = 9,
  PJRT_Buffer_Type_F16 = 10,
  PJRT_Buffer_Type_F32 = 11,
  PJRT_Buffer_Type_F64 = 12,
  PJRT_Buffer_Type_BF16 = 13,
  PJRT_Buffer_Type_C64 = 14,
  PJRT_Buffer_Type_C128 = 15,
  PJRT_Buffer_Type_F8E5M2 = 16,
  PJRT_Buffer_Type_F8E4M3FN = 17,
  PJRT_Buffer_Type_F8E4M3B11FNUZ = 18,
  PJRT_Buffer_Type_F8E5M2FNUZ = 19,
  PJRT_Buffer_Type_F8E4M3FNUZ = 20,
  PJRT_Buffer_Type_S4 = 21,
  PJRT_Buffer_Type_U4 = 22,
  PJRT_Buffer_Type_TOKEN = 23,
  PJRT_Buffer_Type_S2 = 24,
  PJRT_Buffer_Type_U2 = 25,
  PJRT_Buffer_Type_F8E4M3 = 26,
  PJRT_Buffer_Type_F8E3M4 = 27,
  PJRT_Buffer_Type_F8E8M0FNU = 28,
  PJRT_Buffer_Type_F4E2M1FN = 29,
  PJRT_Buffer_Type_S1 = 30,
  PJRT_Buffer_Type_U1 = 31,
  PJRT_Buffer_Type_F6E2M3FN = 32,
  PJRT_Buffer_Type_F6E3M2FN = 33
} PJRT_Buffer_Type;

/* How long the runtime may use a host buffer passed to it. */
typedef enum {
  /* Host data is read before the call returns; caller may reuse at once. */
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
  /* Host data stays valid and unchanged until done_with_host_buffer fires. */
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
  /* Device buffer may alias the host data while the buffer lives. */
  PJRT_HostBufferSemantics_kImmutableZeroCopy = 2,
  /* As above, and the device may also write to it. */
  PJRT_HostBufferSemantics_kMutableZeroCopy = 3
} PJRT_HostBufferSemantics;

/* -------------------------------------------------------------- layouts */

typedef enum {
  PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
  PJRT_Buffer_MemoryLayout_Type_Strides = 1
} PJRT_Buffer_MemoryLayout_Type;

/* Dimension order plus optional tiling; tile_dims holds all tiles' dims
 * back to back, tile_dim_sizes[i] says how many belong to tile i. */
typedef struct PJRT_Buffer_MemoryLayout_Tiled {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* minor_to_major;
  size_t minor_to_major_size;
  const int64_t* tile_dims;
  const size_t* tile_dim_sizes;
  size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;
PJRT_STRUCT_TRAITS(PJRT_Buffer_MemoryLayout_Tiled, num_tiles);

/* Per-dimension byte strides. */
typedef struct PJRT_Buffer_MemoryLayout_Strides {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* byte_strides;
  size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;
PJRT_STRUCT_TRAITS(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides);

/* Tagged union: `type` selects `tiled` or `strides`. */
typedef struct PJRT_Buffer_MemoryLayout {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  union {
    PJRT_Buffer_MemoryLayout_Tiled tiled;
    PJRT_Buffer_MemoryLayout_Strides strides;
  };
  PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;
PJRT_STRUCT_TRAITS(PJRT_Buffer_MemoryLayout, type);

typedef struct PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager;
  int buffer_index;
  const void* data;
  const int64_t* shape_dims;
  size_t shape_num_dims;
  PJRT_Buffer_Type shape_element_type;
  PJRT_Buffer_MemoryLayout* shape_layout;
  PJRT_Event* done_with_h2d_transfer; /* out */
} PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args,
                   done_with_h2d_transfer);
typedef PJRT_Error* PJRT_AsyncHostToDeviceTransferManager_TransferLiteral(
    PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args* args);

/* ------------------------------------------------------ buffer creation */

typedef struct PJRT_Client_CreateUninitializedBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const int64_t* shape_dims;
  size_t shape_num_dims;
  PJRT_Buffer_Type shape_element_type;
  PJRT_Buffer_MemoryLayout* shape_layout; /* optional */
  PJRT_Device* device;                    /* device or memory */
  PJRT_Memory* memory;
  PJRT_Buffer* buffer; /* out */
} PJRT_Client_CreateUninitializedBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_CreateUninitializedBuffer_Args, buffer);
typedef PJRT_Error* PJRT_Client_CreateUninitializedBuffer(
    PJRT_Client_CreateUninitializedBuffer_Args* args);

/* A buffer whose every use fails with the given error. */
typedef struct PJRT_Client_CreateErrorBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Error_Code error_code;
  const char* error_message;
  size_t error_message_size;
  const int64_t* shape_dims;
  size_t shape_num_dims;
  PJRT_Buffer_Type shape_element_type;
  PJRT_Buffer_MemoryLayout* shape_layout;
  PJRT_Memory* memory;
  PJRT_Buffer* buffer; /* out */
  const PJRT_NamedValue* payload; /* since 0.103 */
  size_t num_payload;
} PJRT_Client_CreateErrorBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_CreateErrorBuffer_Args, num_payload);
typedef PJRT_Error* PJRT_Client_CreateErrorBuffer(
    PJRT_Client_CreateErrorBuffer_Args* args);

/* A placeholder buffer, later bound by PJRT_Client_FulfillAliasBuffer. */
typedef struct PJRT_Client_CreateAliasBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Memory* memory;
  const int64_t* shape_dims;
  size_t shape_num_dims;
  PJRT_Buffer_Type shape_element_type;
  PJRT_Buffer_MemoryLayout* shape_layout;
  PJRT_Buffer* alias_buffer;                                /* out */
  PJRT_FulfillAliasBufferCallback* fulfill_alias_buffer_cb; /* out */
} PJRT_Client_CreateAliasBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_CreateAliasBuffer_Args,
                   fulfill_alias_buffer_cb);
typedef PJRT_Error* PJRT_Client_CreateAliasBuffer(
    PJRT_Client_CreateAliasBuffer_Args* args);

typedef struct PJRT_Client_FulfillAliasBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Buffer* buffer; /* the real buffer (when status_code is OK) */
  PJRT_Error_Code status_code;
  const char* error_message;
  size_t error_message_size;
  PJRT_FulfillAliasBufferCallback* fulfill_alias_buffer_cb;
} PJRT_Client_FulfillAliasBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_FulfillAliasBuffer_Args,
                   fulfill_alias_buffer_cb);
typedef PJRT_Error* PJRT_Client_FulfillAliasBuffer(
    PJRT_Client_FulfillAliasBuffer_Args* args);

/* Copies (or aliases, per semantics) a host array into a new buffer. */
typedef struct PJRT_Client_BufferFromHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const void* data;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides; /* NULL = dense major-to-minor */
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device; /* ignored when memory is set */
  PJRT_Memory* memory;
  PJRT_Buffer_MemoryLayout* device_layout; /* optional */
  PJRT_Event* done_with_host_buffer;       /* out */
  PJRT_Buffer* buffer;                     /* out */
} PJRT_Client_BufferFromHostBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_BufferFromHostBuffer_Args, buffer);
typedef PJRT_Error* PJRT_Client_BufferFromHostBuffer(
    PJRT_Client_BufferFromHostBuffer_Args* args);

/* Wraps existing device memory as a buffer without copying. */
typedef struct PJRT_Client_CreateViewOfDeviceBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  void* device_buffer_ptr;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Buffer_Type element_type;
  PJRT_Buffer_MemoryLayout* layout;
  PJRT_Device* device;
  void (*on_delete_callback)(void* device_buffer_ptr, void* user_arg);
  void* on_delete_callback_arg;
  intptr_t stream; /* platform stream to sync with, or 0 */
  PJRT_Buffer* buffer; /* out */
  PJRT_Memory* memory; /* optional; overrides device */
} PJRT_Client_CreateViewOfDeviceBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_CreateViewOfDeviceBuffer_Args, memory);
typedef PJRT_Error* PJRT_Client_CreateViewOfDeviceBuffer(
    PJRT_Client_CreateViewOfDeviceBuffer_Args* args);

/* Shape of one buffer for async host-to-device creation. */
struct PJRT_ShapeSpec {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Buffer_Type element_type;
};
PJRT_STRUCT_TRAITS(PJRT_ShapeSpec, element_type);

typedef struct PJRT_Client_CreateBuffersForAsyncHostToDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_ShapeSpec* shape_specs;
  size_t num_shape_specs;
  PJRT_Buffer_MemoryLayout** device_layouts; /* optional */
  size_t num_device_layouts;
  PJRT_Memory* memory;
  PJRT_AsyncHostToDeviceTransferManager* transfer_manager; /* out */
} PJRT_Client_CreateBuffersForAsyncHostToDevice_Args;
PJRT_STRUCT_TRAITS(PJRT_Client_CreateBuffersForAsyncHostToDevice_Args,
                   transfer_manager);
typedef PJRT_Error* PJRT_Client_CreateBuffersForAsyncHostToDevice(
    PJRT_Client_CreateBuffersForAsyncHostToDevice_Args* args);

/* ---------------------------------------------------- device description */

typedef struct PJRT_DeviceDescription_Id_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int id; /* out: globally unique device id */
} PJRT_DeviceDescription_Id_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_Id_Args, id);
typedef PJRT_Error* PJRT_DeviceDescription_Id(
    PJRT_DeviceDescription_Id_Args* args);

typedef struct PJRT_DeviceDescription_ProcessIndex_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int process_index; /* out */
} PJRT_DeviceDescription_ProcessIndex_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_ProcessIndex_Args, process_index);
typedef PJRT_Error* PJRT_DeviceDescription_ProcessIndex(
    PJRT_DeviceDescription_ProcessIndex_Args* args);

/* Note the field order: count first, then array. */
typedef struct PJRT_DeviceDescription_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  size_t num_attributes;             /* out */
  const PJRT_NamedValue* attributes; /* out */
} PJRT_DeviceDescription_Attributes_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_Attributes_Args, attributes);
typedef PJRT_Error* PJRT_DeviceDescription_Attributes(
    PJRT_DeviceDescription_Attributes_Args* args);

typedef struct PJRT_DeviceDescription_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* device_kind; /* out */
  size_t device_kind_size; /* out */
} PJRT_DeviceDescription_Kind_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_Kind_Args, device_kind_size);
typedef PJRT_Error* PJRT_DeviceDescription_Kind(
    PJRT_DeviceDescription_Kind_Args* args);

typedef struct PJRT_DeviceDescription_DebugString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* debug_string; /* out: verbose form */
  size_t debug_string_size; /* out */
} PJRT_DeviceDescription_DebugString_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_DebugString_Args, debug_string_size);
typedef PJRT_Error* PJRT_DeviceDescription_DebugString(
    PJRT_DeviceDescription_DebugString_Args* args);

typedef struct PJRT_DeviceDescription_ToString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* to_string; /* out: short form */
  size_t to_string_size; /* out */
} PJRT_DeviceDescription_ToString_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_ToString_Args, to_string_size);
typedef PJRT_Error* PJRT_DeviceDescription_ToString(
    PJRT_DeviceDescription_ToString_Args* args);

/* ---------------------------------------------------------------- devices */

typedef struct PJRT_Device_GetDescription_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_DeviceDescription* device_description; /* out */
} PJRT_Device_GetDescription_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_GetDescription_Args, device_description);
typedef PJRT_Error* PJRT_Device_GetDescription(
    PJRT_Device_GetDescription_Args* args);

typedef struct PJRT_Device_IsAddressable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  bool is_addressable; /* out */
} PJRT_Device_IsAddressable_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_IsAddressable_Args, is_addressable);
typedef PJRT_Error* PJRT_Device_IsAddressable(
    PJRT_Device_IsAddressable_Args* args);

typedef struct PJRT_Device_LocalHardwareId_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int local_hardware_id; /* out; -1 if undefined */
} PJRT_Device_LocalHardwareId_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_LocalHardwareId_Args, local_hardware_id);
typedef PJRT_Error* PJRT_Device_LocalHardwareId(
    PJRT_Device_LocalHardwareId_Args* args);

typedef struct PJRT_Device_AddressableMemories_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_Memory* const* memories; /* out */
  size_t num_memories;          /* out */
} PJRT_Device_AddressableMemories_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_AddressableMemories_Args, num_memories);
typedef PJRT_Error* PJRT_Device_AddressableMemories(
    PJRT_Device_AddressableMemories_Args* args);

typedef struct PJRT_Device_DefaultMemory_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_Memory* memory; /* out */
} PJRT_Device_DefaultMemory_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_DefaultMemory_Args, memory);
typedef PJRT_Error* PJRT_Device_DefaultMemory(
    PJRT_Device_DefaultMemory_Args* args);

/* Allocator statistics.  Every optional value has an `_is_set` flag.
 * jaxlib 0.10.2 (API 0.112) passes struct_size 185, i.e. up to
 * peak_pool_bytes_is_set: never write the 0.113 fields for such callers. */
typedef struct PJRT_Device_MemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int64_t bytes_in_use; /* out; always set */
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set; /* end of the 0.112 layout (185 bytes) */
  int64_t peak_allocated_bytes; /* since 0.113 */
  bool peak_allocated_bytes_is_set;
} PJRT_Device_MemoryStats_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_MemoryStats_Args, peak_allocated_bytes_is_set);
typedef PJRT_Error* PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args* args);

typedef struct PJRT_Device_ClearMemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
} PJRT_Device_ClearMemoryStats_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_ClearMemoryStats_Args, device);
typedef PJRT_Error* PJRT_Device_ClearMemoryStats(
    PJRT_Device_ClearMemoryStats_Args* args);

/* Fails the execution with `launch_id` on this device, if still pending. */
typedef struct PJRT_Device_PoisonExecution_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int32_t launch_id;
  PJRT_Error_Code error_code;
  const char* error_message;
  size_t error_message_size;
  bool poisoned; /* out */
  const PJRT_NamedValue* payload; /* since 0.100 */
  size_t num_payload;
} PJRT_Device_PoisonExecution_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_PoisonExecution_Args, num_payload);
typedef PJRT_Error* PJRT_Device_PoisonExecution(
    PJRT_Device_PoisonExecution_Args* args);

/* Backing storage for attributes returned by PJRT_Device_GetAttributes. */
typedef struct PJRT_Device_Attributes PJRT_Device_Attributes;

typedef struct PJRT_Device_GetAttributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  const PJRT_NamedValue* attributes;         /* out */
  size_t num_attributes;                     /* out */
  PJRT_Device_Attributes* device_attributes; /* out: owns `attributes` */
  void (*attributes_deleter)(PJRT_Device_Attributes* device_attributes);
} PJRT_Device_GetAttributes_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_GetAttributes_Args, attributes_deleter);
typedef PJRT_Error* PJRT_Device_GetAttributes(
    PJRT_Device_GetAttributes_Args* args);

typedef struct PJRT_Device_CreateAsyncTrackingEvent_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  const char* description;
  size_t description_size;
  PJRT_AsyncTrackingEvent* event; /* out */
} PJRT_Device_CreateAsyncTrackingEvent_Args;
PJRT_STRUCT_TRAITS(PJRT_Device_CreateAsyncTrackingEvent_Args, event);
typedef PJRT_Error* PJRT_Device_CreateAsyncTrackingEvent(
    PJRT_Device_CreateAsyncTrackingEvent_Args* args);

typedef struct PJRT_AsyncTrackingEvent_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_AsyncTrackingEvent* event;
} PJRT_AsyncTrackingEvent_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_AsyncTrackingEvent_Destroy_Args, event);
typedef PJRT_Error* PJRT_AsyncTrackingEvent_Destroy(
    PJRT_AsyncTrackingEvent_Destroy_Args* args);

/* --------------------------------------------------------------- memories */

typedef struct PJRT_Memory_Id_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  int id; /* out */
} PJRT_Memory_Id_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_Id_Args, id);
typedef PJRT_Error* PJRT_Memory_Id(PJRT_Memory_Id_Args* args);

typedef struct PJRT_Memory_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  const char* kind; /* out, e.g. "device" */
  size_t kind_size; /* out */
} PJRT_Memory_Kind_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_Kind_Args, kind_size);
typedef PJRT_Error* PJRT_Memory_Kind(PJRT_Memory_Kind_Args* args);

typedef struct PJRT_Memory_Kind_Id_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  int kind_id; /* out */
} PJRT_Memory_Kind_Id_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_Kind_Id_Args, kind_id);
typedef PJRT_Error* PJRT_Memory_Kind_Id(PJRT_Memory_Kind_Id_Args* args);

typedef struct PJRT_Memory_DebugString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  const char* debug_string; /* out */
  size_t debug_string_size; /* out */
} PJRT_Memory_DebugString_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_DebugString_Args, debug_string_size);
typedef PJRT_Error* PJRT_Memory_DebugString(PJRT_Memory_DebugString_Args* args);

typedef struct PJRT_Memory_ToString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  const char* to_string; /* out */
  size_t to_string_size; /* out */
} PJRT_Memory_ToString_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_ToString_Args, to_string_size);
typedef PJRT_Error* PJRT_Memory_ToString(PJRT_Memory_ToString_Args* args);

typedef struct PJRT_Memory_AddressableByDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Memory* memory;
  PJRT_Device* const* devices; /* out */
  size_t num_devices;          /* out */
} PJRT_Memory_AddressableByDevices_Args;
PJRT_STRUCT_TRAITS(PJRT_Memory_AddressableByDevices_Args, num_devices);
typedef PJRT_Error* PJRT_Memory_AddressableByDevices(
    PJRT_Memory_AddressableByDevices_Args* args);

/* -------------------------------------------------------- execute context */

typedef struct PJRT_ExecuteContext_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_ExecuteContext* context; /* out */
} PJRT_ExecuteContext_Create_Args;
PJRT_STRUCT_TRAITS(PJRT_ExecuteContext_Create_Args, context);
typedef PJRT_Error* PJRT_ExecuteContext_Create(
    PJRT_ExecuteContext_Create_Args* args);

typedef struct PJRT_ExecuteContext_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_ExecuteContext* context;
} PJRT_ExecuteContext_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_ExecuteContext_Destroy_Args, context);
typedef PJRT_Error* PJRT_ExecuteContext_Destroy(
    PJRT_ExecuteContext_Destroy_Args* args);

/* ------------------------------------------------------------ executables */

typedef struct PJRT_Executable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
} PJRT_Executable_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_Destroy_Args, executable);
typedef PJRT_Error* PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args* args);

typedef struct PJRT_LoadedExecutable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
} PJRT_LoadedExecutable_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_Destroy_Args, executable);
typedef PJRT_Error* PJRT_LoadedExecutable_Destroy(
    PJRT_LoadedExecutable_Destroy_Args* args);

/* Returns a new PJRT_Executable the caller must destroy. */
typedef struct PJRT_LoadedExecutable_GetExecutable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* loaded_executable;
  PJRT_Executable* executable; /* out */
} PJRT_LoadedExecutable_GetExecutable_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_GetExecutable_Args, executable);
typedef PJRT_Error* PJRT_LoadedExecutable_GetExecutable(
    PJRT_LoadedExecutable_GetExecutable_Args* args);

/* Owner of the bytes returned by GetDeviceAssignment. */
typedef struct PJRT_DeviceAssignmentSerialized PJRT_DeviceAssignmentSerialized;

/* Serialized xla.DeviceAssignmentProto of a loaded executable. */
typedef struct PJRT_LoadedExecutable_GetDeviceAssignment_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  const char* serialized_bytes; /* out */
  size_t serialized_bytes_size; /* out */
  PJRT_DeviceAssignmentSerialized* serialized_device_assignment; /* out */
  void (*serialized_device_assignment_deleter)(
      PJRT_DeviceAssignmentSerialized* da); /* out */
} PJRT_LoadedExecutable_GetDeviceAssignment_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_GetDeviceAssignment_Args,
                   serialized_device_assignment_deleter);
typedef PJRT_Error* PJRT_LoadedExecutable_GetDeviceAssignment(
    PJRT_LoadedExecutable_GetDeviceAssignment_Args* args);

typedef struct PJRT_Executable_Name_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* executable_name; /* out; owned by executable */
  size_t executable_name_size; /* out */
} PJRT_Executable_Name_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_Name_Args, executable_name_size);
typedef PJRT_Error* PJRT_Executable_Name(PJRT_Executable_Name_Args* args);

typedef struct PJRT_Executable_NumReplicas_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_replicas; /* out */
} PJRT_Executable_NumReplicas_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_NumReplicas_Args, num_replicas);
typedef PJRT_Error* PJRT_Executable_NumReplicas(
    PJRT_Executable_NumReplicas_Args* args);

typedef struct PJRT_Executable_NumPartitions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_partitions; /* out */
} PJRT_Executable_NumPartitions_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_NumPartitions_Args, num_partitions);
typedef PJRT_Error* PJRT_Executable_NumPartitions(
    PJRT_Executable_NumPartitions_Args* args);

/* (replica, partition) coordinates of one addressable device. */
typedef struct PJRT_LogicalDeviceIds {
  int replica;
  int partition;
} PJRT_LogicalDeviceIds;

typedef struct PJRT_LoadedExecutable_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_Device* const* addressable_devices; /* out */
  size_t num_addressable_devices;          /* out */
} PJRT_LoadedExecutable_AddressableDevices_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_AddressableDevices_Args,
                   num_addressable_devices);
typedef PJRT_Error* PJRT_LoadedExecutable_AddressableDevices(
    PJRT_LoadedExecutable_AddressableDevices_Args* args);

typedef struct PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_LogicalDeviceIds* addressable_device_logical_ids; /* out */
  size_t num_addressable_device_logical_ids;             /* out */
} PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args,
                   num_addressable_device_logical_ids);
typedef PJRT_Error* PJRT_LoadedExecutable_AddressableDeviceLogicalIds(
    PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args* args);

/* Two-phase: call with program->code == NULL to learn code_size, then
 * again with a caller buffer of that size. */
typedef struct PJRT_Executable_OptimizedProgram_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  PJRT_Program* program; /* caller-owned, filled by callee */
} PJRT_Executable_OptimizedProgram_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_OptimizedProgram_Args, program);
typedef PJRT_Error* PJRT_Executable_OptimizedProgram(
    PJRT_Executable_OptimizedProgram_Args* args);

typedef struct PJRT_LoadedExecutable_Delete_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
} PJRT_LoadedExecutable_Delete_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_Delete_Args, executable);
/* Drops device resources; the handle stays valid until Destroy. */
typedef PJRT_Error* PJRT_LoadedExecutable_Delete(
    PJRT_LoadedExecutable_Delete_Args* args);

typedef struct PJRT_LoadedExecutable_IsDeleted_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  bool is_deleted; /* out */
} PJRT_LoadedExecutable_IsDeleted_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_IsDeleted_Args, is_deleted);
typedef PJRT_Error* PJRT_LoadedExecutable_IsDeleted(
    PJRT_LoadedExecutable_IsDeleted_Args* args);

/* ------------------------------------------ host send/recv and callbacks */

/* A block of bytes with its own release function. */
typedef struct PJRT_Chunk {
  void* data;
  size_t size;
  void (*deleter)(void* data, void* deleter_arg);
  void* deleter_arg;
} PJRT_Chunk;

/* Device-to-host send: takes ownership of `chunk`. */
typedef PJRT_Error* (*PJRT_SendCallback)(PJRT_Chunk* chunk,
                                         PJRT_CallbackError* callback_error,
                                         size_t total_size_in_bytes,
                                         bool done, void* user_arg);
/* Host-to-device recv: caller feeds `stream`. */
typedef void (*PJRT_RecvCallback)(PJRT_CopyToDeviceStream* stream,
                                  void* user_arg);

typedef struct PJRT_SendCallbackInfo {
  int64_t channel_id;
  void* user_arg;
  PJRT_SendCallback send_callback;
} PJRT_SendCallbackInfo;
PJRT_STRUCT_TRAITS(PJRT_SendCallbackInfo, send_callback);

typedef struct PJRT_RecvCallbackInfo {
  int64_t channel_id;
  void* user_arg;
  PJRT_RecvCallback recv_callback;
} PJRT_RecvCallbackInfo;
PJRT_STRUCT_TRAITS(PJRT_RecvCallbackInfo, recv_callback);

/* Receives one operand of an HLO output callback (since 0.112). */
typedef void (*PJRT_HloOutputCallback)(int64_t replica_id,
                                       int64_t partition_id, const void* data,
                                       const int64_t* shape_dims,
                                       size_t shape_num_dims,
                                       PJRT_Buffer_Type shape_element_type,
                                       int64_t operand_index, void* user_arg);

typedef struct PJRT_HloOutputCallbackInfo {
  void* user_arg;
  PJRT_HloOutputCallback callback;
  int64_t callback_id;
  size_t num_operands;
} PJRT_HloOutputCallbackInfo;
PJRT_STRUCT_TRAITS(PJRT_HloOutputCallbackInfo, num_operands);

typedef struct PJRT_MultiSlice_Config PJRT_MultiSlice_Config;

/* ---------------------------------------------------------------- execute */

typedef struct PJRT_ExecuteOptions {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  /* [num_devices][num_send_ops] / [num_devices][num_recv_ops] */
  PJRT_SendCallbackInfo** send_callbacks;
  PJRT_RecvCallbackInfo** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id; /* ties together the launches of one multi-host step */
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext* context;
  const char* call_location; /* NUL-terminated, optional */
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  PJRT_MultiSlice_Config* multi_slice_config; /* since 0.97 */
  bool use_major_to_minor_data_layout_for_callbacks; /* since 0.108 */
  PJRT_HloOutputCallbackInfo* hlo_output_callbacks;  /* since 0.112 */
  size_t num_hlo_output_callbacks;
} PJRT_ExecuteOptions;
PJRT_STRUCT_TRAITS(PJRT_ExecuteOptions, num_hlo_output_callbacks);

/* Runs on num_devices devices at once (or on execute_device if set, with
 * num_devices == 1).  output_lists[d] is caller-allocated with NumOutputs
 * slots; device_complete_events, if non-NULL, has num_devices slots. */
typedef struct PJRT_LoadedExecutable_Execute_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists; /* [num_devices][num_args] */
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;   /* [num_devices][num_outputs], out */
  PJRT_Event** device_complete_events; /* [num_devices], out, optional */
  PJRT_Device* execute_device;         /* optional portable target */
} PJRT_LoadedExecutable_Execute_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_Execute_Args, execute_device);
typedef PJRT_Error* PJRT_LoadedExecutable_Execute(
    PJRT_LoadedExecutable_Execute_Args* args);

/* ----------------------------------------------- executable introspection */

typedef struct PJRT_Executable_NumOutputs_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs; /* out */
} PJRT_Executable_NumOutputs_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_NumOutputs_Args, num_outputs);
typedef PJRT_Error* PJRT_Executable_NumOutputs(
    PJRT_Executable_NumOutputs_Args* args);

typedef struct PJRT_Executable_SizeOfGeneratedCodeInBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  int64_t size_in_bytes; /* out */
} PJRT_Executable_SizeOfGeneratedCodeInBytes_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_SizeOfGeneratedCodeInBytes_Args,
                   size_in_bytes);
typedef PJRT_Error* PJRT_Executable_SizeOfGeneratedCodeInBytes(
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* args);

typedef struct PJRT_Executable_Fingerprint_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* executable_fingerprint; /* out; owned by executable */
  size_t executable_fingerprint_size; /* out */
} PJRT_Executable_Fingerprint_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_Fingerprint_Args,
                   executable_fingerprint_size);
typedef PJRT_Error* PJRT_Executable_Fingerprint(
    PJRT_Executable_Fingerprint_Args* args);

/* Note the field order: count first, then array. */
typedef struct PJRT_Executable_GetCostAnalysis_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_properties;             /* out */
  const PJRT_NamedValue* properties; /* out; owned by executable */
} PJRT_Executable_GetCostAnalysis_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_GetCostAnalysis_Args, properties);
typedef PJRT_Error* PJRT_Executable_GetCostAnalysis(
    PJRT_Executable_GetCostAnalysis_Args* args);

/* All outputs, in bytes. */
typedef struct PJRT_Executable_GetCompiledMemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  int64_t generated_code_size_in_bytes;
  int64_t argument_size_in_bytes;
  int64_t output_size_in_bytes;
  int64_t alias_size_in_bytes;
  int64_t temp_size_in_bytes;
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  int64_t peak_memory_in_bytes;
  int64_t total_size_in_bytes; /* this and below: since 0.104 */
  int64_t total_allocation_bytes;
  int64_t indefinite_allocations;
  int64_t peak_unpadded_heap_bytes;
} PJRT_Executable_GetCompiledMemoryStats_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_GetCompiledMemoryStats_Args,
                   peak_unpadded_heap_bytes);
typedef PJRT_Error* PJRT_Executable_GetCompiledMemoryStats(
    PJRT_Executable_GetCompiledMemoryStats_Args* args);

typedef struct PJRT_Executable_OutputElementTypes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  PJRT_Buffer_Type* output_types; /* out; owned by executable */
  size_t num_output_types;        /* out */
} PJRT_Executable_OutputElementTypes_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_OutputElementTypes_Args, num_output_types);
typedef PJRT_Error* PJRT_Executable_OutputElementTypes(
    PJRT_Executable_OutputElementTypes_Args* args);

/* dims: all outputs' dimensions back to back; dim_sizes[i]: rank of i. */
typedef struct PJRT_Executable_OutputDimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;      /* out */
  const int64_t* dims;     /* out */
  const size_t* dim_sizes; /* out */
} PJRT_Executable_OutputDimensions_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_OutputDimensions_Args, dim_sizes);
typedef PJRT_Error* PJRT_Executable_OutputDimensions(
    PJRT_Executable_OutputDimensions_Args* args);

typedef struct PJRT_Executable_ParameterMemoryKinds_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_parameters;           /* out */
  const char* const* memory_kinds; /* out */
  const size_t* memory_kind_sizes; /* out */
} PJRT_Executable_ParameterMemoryKinds_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_ParameterMemoryKinds_Args,
                   memory_kind_sizes);
typedef PJRT_Error* PJRT_Executable_ParameterMemoryKinds(
    PJRT_Executable_ParameterMemoryKinds_Args* args);

typedef struct PJRT_Executable_OutputMemoryKinds_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;              /* out */
  const char* const* memory_kinds; /* out */
  const size_t* memory_kind_sizes; /* out */
} PJRT_Executable_OutputMemoryKinds_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes);
typedef PJRT_Error* PJRT_Executable_OutputMemoryKinds(
    PJRT_Executable_OutputMemoryKinds_Args* args);

/* ------------------------------------------- serialization and reloading */

/* Owners of bytes handed out by Serialize / GetCompileOptions. */
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;
typedef struct PJRT_SerializedCompileOptions PJRT_SerializedCompileOptions;

typedef struct PJRT_Executable_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Executable* executable;
  const char* serialized_bytes; /* out; valid until the deleter runs */
  size_t serialized_bytes_size; /* out */
  PJRT_SerializedExecutable* serialized_executable; /* out */
  void (*serialized_executable_deleter)(
      PJRT_SerializedExecutable* exec); /* out */
} PJRT_Executable_Serialize_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_Serialize_Args,
                   serialized_executable_deleter);
typedef PJRT_Error* PJRT_Executable_Serialize(
    PJRT_Executable_Serialize_Args* args);

/* The serialized CompileOptionsProto an executable was built with. */
typedef struct PJRT_Executable_GetCompileOptions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* serialized_bytes; /* out */
  size_t serialized_bytes_size; /* out */
  PJRT_SerializedCompileOptions* serialized_compile_options; /* out */
  void (*serialized_compile_options_deleter)(
      PJRT_SerializedCompileOptions* options); /* out */
} PJRT_Executable_GetCompileOptions_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_GetCompileOptions_Args,
                   serialized_compile_options_deleter);
typedef PJRT_Error* PJRT_Executable_GetCompileOptions(
    PJRT_Executable_GetCompileOptions_Args* args);

/* Extra load-time options (since 0.111).  Note: no extension_start. */
typedef struct PJRT_LoadOptions {
  size_t struct_size;
  const int32_t* computation_origin;
  size_t computation_origin_size;
  PJRT_MultiSlice_Config* multi_slice_config;
} PJRT_LoadOptions;
PJRT_STRUCT_TRAITS(PJRT_LoadOptions, multi_slice_config);

typedef struct PJRT_Executable_DeserializeAndLoad_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable; /* out */
  const char* overridden_serialized_compile_options; /* optional */
  size_t overridden_serialized_compile_options_size;
  PJRT_LoadOptions* load_options; /* optional, since 0.111 */
} PJRT_Executable_DeserializeAndLoad_Args;
PJRT_STRUCT_TRAITS(PJRT_Executable_DeserializeAndLoad_Args, load_options);
typedef PJRT_Error* PJRT_Executable_DeserializeAndLoad(
    PJRT_Executable_DeserializeAndLoad_Args* args);

typedef struct PJRT_LoadedExecutable_Fingerprint_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  const char* executable_fingerprint; /* out */
  size_t executable_fingerprint_size; /* out */
} PJRT_LoadedExecutable_Fingerprint_Args;
PJRT_STRUCT_TRAITS(PJRT_LoadedExecutable_Fingerprint_Args,
                   executable_fingerprint_size);
typedef PJRT_Error* PJRT_LoadedExecutable_Fingerprint(
    PJRT_LoadedExecutable_Fingerprint_Args* args);

/* ---------------------------------------------------------------- buffers */

typedef struct PJRT_Buffer_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Destroy_Args, buffer);
typedef PJRT_Error* PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args* args);

typedef struct PJRT_Buffer_ElementType_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type type; /* out */
} PJRT_Buffer_ElementType_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_ElementType_Args, type);
typedef PJRT_Error* PJRT_Buffer_ElementType(PJRT_Buffer_ElementType_Args* args);

typedef struct PJRT_Buffer_Dimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* dims; /* out; owned by buffer */
  size_t num_dims;     /* out */
} PJRT_Buffer_Dimensions_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Dimensions_Args, num_dims);
typedef PJRT_Error* PJRT_Buffer_Dimensions(PJRT_Buffer_Dimensions_Args* args);

typedef struct PJRT_Buffer_UnpaddedDimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* unpadded_dims; /* out */
  size_t num_dims;              /* out */
} PJRT_Buffer_UnpaddedDimensions_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_UnpaddedDimensions_Args, num_dims);
typedef PJRT_Error* PJRT_Buffer_UnpaddedDimensions(
    PJRT_Buffer_UnpaddedDimensions_Args* args);

typedef struct PJRT_Buffer_DynamicDimensionIndices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const size_t* dynamic_dim_indices; /* out */
  size_t num_dynamic_dims;           /* out */
} PJRT_Buffer_DynamicDimensionIndices_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_DynamicDimensionIndices_Args,
                   num_dynamic_dims);
typedef PJRT_Error* PJRT_Buffer_DynamicDimensionIndices(
    PJRT_Buffer_DynamicDimensionIndices_Args* args);

/* `layout` is embedded by value; its arrays are owned by the buffer. */
typedef struct PJRT_Buffer_GetMemoryLayout_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_MemoryLayout layout; /* out */
} PJRT_Buffer_GetMemoryLayout_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_GetMemoryLayout_Args, layout);
typedef PJRT_Error* PJRT_Buffer_GetMemoryLayout(
    PJRT_Buffer_GetMemoryLayout_Args* args);

/* Device-to-host copy.  With dst == NULL only dst_size is reported. */
typedef struct PJRT_Buffer_ToHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* src;
  PJRT_Buffer_MemoryLayout* host_layout; /* optional; NULL = dense */
  void* dst;
  size_t dst_size;   /* in: capacity; out: required size when dst is NULL */
  PJRT_Event* event; /* out: fires when dst is filled */
} PJRT_Buffer_ToHostBuffer_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_ToHostBuffer_Args, event);
typedef PJRT_Error* PJRT_Buffer_ToHostBuffer(
    PJRT_Buffer_ToHostBuffer_Args* args);

typedef struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  size_t on_device_size_in_bytes; /* out */
} PJRT_Buffer_OnDeviceSizeInBytes_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_OnDeviceSizeInBytes_Args,
                   on_device_size_in_bytes);
typedef PJRT_Error* PJRT_Buffer_OnDeviceSizeInBytes(
    PJRT_Buffer_OnDeviceSizeInBytes_Args* args);

typedef struct PJRT_Buffer_Delete_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Delete_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Delete_Args, buffer);
/* Frees device memory; the handle stays valid until Destroy. */
typedef PJRT_Error* PJRT_Buffer_Delete(PJRT_Buffer_Delete_Args* args);

typedef struct PJRT_Buffer_IsDeleted_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool is_deleted; /* out */
} PJRT_Buffer_IsDeleted_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_IsDeleted_Args, is_deleted);
typedef PJRT_Error* PJRT_Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args* args);

/* Raw byte-range copy to host (no layout conversion). */
typedef struct PJRT_Buffer_CopyRawToHost_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  void* dst;
  int64_t offset;
  int64_t transfer_size;
  PJRT_Event* event; /* out */
} PJRT_Buffer_CopyRawToHost_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_CopyRawToHost_Args, event);
typedef PJRT_Error* PJRT_Buffer_CopyRawToHost(
    PJRT_Buffer_CopyRawToHost_Args* args);

/* Passed by the caller to future_ready_callback once dst is known.
 * Note: no extension_start. */
typedef struct PJRT_Buffer_CopyRawToHostFuture_Callback_Args {
  size_t struct_size;
  void* callback_data;
  PJRT_Error_Code error_code;
  const char* error_message;
  size_t error_message_size;
  void* dst;
} PJRT_Buffer_CopyRawToHostFuture_Callback_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_CopyRawToHostFuture_Callback_Args, dst);

/* Like CopyRawToHost, but the destination is supplied later through
 * future_ready_callback. */
typedef struct PJRT_Buffer_CopyRawToHostFuture_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  int64_t offset;
  int64_t transfer_size;
  PJRT_Event* event;   /* out */
  void* callback_data; /* out */
  void (*future_ready_callback)(
      PJRT_Buffer_CopyRawToHostFuture_Callback_Args* args); /* out */
} PJRT_Buffer_CopyRawToHostFuture_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_CopyRawToHostFuture_Args,
                   future_ready_callback);
typedef PJRT_Error* PJRT_Buffer_CopyRawToHostFuture(
    PJRT_Buffer_CopyRawToHostFuture_Args* args);

typedef struct PJRT_Buffer_CopyToDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* dst_device;
  PJRT_Buffer* dst_buffer; /* out */
} PJRT_Buffer_CopyToDevice_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_CopyToDevice_Args, dst_buffer);
typedef PJRT_Error* PJRT_Buffer_CopyToDevice(
    PJRT_Buffer_CopyToDevice_Args* args);

typedef struct PJRT_Buffer_CopyToMemory_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Memory* dst_memory;
  PJRT_Buffer* dst_buffer; /* out */
} PJRT_Buffer_CopyToMemory_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_CopyToMemory_Args, dst_buffer);
typedef PJRT_Error* PJRT_Buffer_CopyToMemory(
    PJRT_Buffer_CopyToMemory_Args* args);

/* Reinterprets a buffer's bytes with a new type/shape/layout (0.98). */
typedef struct PJRT_Buffer_Bitcast_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type element_type;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Buffer_MemoryLayout* device_layout;
  PJRT_Buffer* out_buffer; /* out */
} PJRT_Buffer_Bitcast_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Bitcast_Args, out_buffer);
typedef PJRT_Error* PJRT_Buffer_Bitcast(PJRT_Buffer_Bitcast_Args* args);

typedef struct PJRT_Buffer_IsOnCpu_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool is_on_cpu; /* out */
} PJRT_Buffer_IsOnCpu_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
typedef PJRT_Error* PJRT_Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args* args);

typedef struct PJRT_Buffer_Device_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* device; /* out */
} PJRT_Buffer_Device_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Device_Args, device);
typedef PJRT_Error* PJRT_Buffer_Device(PJRT_Buffer_Device_Args* args);

typedef struct PJRT_Buffer_Memory_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Memory* memory; /* out */
} PJRT_Buffer_Memory_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_Memory_Args, memory);
typedef PJRT_Error* PJRT_Buffer_Memory(PJRT_Buffer_Memory_Args* args);

typedef struct PJRT_Buffer_ReadyEvent_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Event* event; /* out; caller destroys */
} PJRT_Buffer_ReadyEvent_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_ReadyEvent_Args, event);
typedef PJRT_Error* PJRT_Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args* args);

typedef struct PJRT_Buffer_UnsafePointer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  uintptr_t buffer_pointer; /* out */
} PJRT_Buffer_UnsafePointer_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_UnsafePointer_Args, buffer_pointer);
typedef PJRT_Error* PJRT_Buffer_UnsafePointer(
    PJRT_Buffer_UnsafePointer_Args* args);

/* External references (e.g. DLPack) pin the device memory. */
typedef struct PJRT_Buffer_IncreaseExternalReferenceCount_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_IncreaseExternalReferenceCount_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer);
typedef PJRT_Error* PJRT_Buffer_IncreaseExternalReferenceCount(
    PJRT_Buffer_IncreaseExternalReferenceCount_Args* args);

typedef struct PJRT_Buffer_DecreaseExternalReferenceCount_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_DecreaseExternalReferenceCount_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer);
typedef PJRT_Error* PJRT_Buffer_DecreaseExternalReferenceCount(
    PJRT_Buffer_DecreaseExternalReferenceCount_Args* args);

typedef struct PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  void* device_memory_ptr; /* out: platform device address */
} PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args,
                   device_memory_ptr);
typedef PJRT_Error* PJRT_Buffer_OpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args);

/* Note: no extension_start. */
typedef struct PJRT_Buffer_DonateWithControlDependency_Callback_Args {
  size_t struct_size;
  void* callback_data;
  PJRT_Error_Code error_code;
  const char* error_message;
  size_t error_message_size;
} PJRT_Buffer_DonateWithControlDependency_Callback_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_DonateWithControlDependency_Callback_Args,
                   error_message_size);

/* Moves `buffer` into out_buffer; the donation completes only once the
 * caller invokes dependency_ready_callback. */
typedef struct PJRT_Buffer_DonateWithControlDependency_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  void* callback_data; /* out */
  void (*dependency_ready_callback)(
      PJRT_Buffer_DonateWithControlDependency_Callback_Args* args); /* out */
  PJRT_Buffer* out_buffer; /* out */
} PJRT_Buffer_DonateWithControlDependency_Args;
PJRT_STRUCT_TRAITS(PJRT_Buffer_DonateWithControlDependency_Args, out_buffer);
typedef PJRT_Error* PJRT_Buffer_DonateWithControlDependency(
    PJRT_Buffer_DonateWithControlDependency_Args* args);

/* ------------------------------------------------- copy-to-device streams */

typedef struct PJRT_CopyToDeviceStream_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_CopyToDeviceStream* stream;
} PJRT_CopyToDeviceStream_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_CopyToDeviceStream_Destroy_Args, stream);
typedef PJRT_Error* PJRT_CopyToDeviceStream_Destroy(
    PJRT_CopyToDeviceStream_Destroy_Args* args);

/* Takes ownership of `chunk`'s data. */
typedef struct PJRT_CopyToDeviceStream_AddChunk_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_CopyToDeviceStream* stream;
  PJRT_Chunk* chunk;
  PJRT_Event* transfer_complete; /* out */
} PJRT_CopyToDeviceStream_AddChunk_Args;
PJRT_STRUCT_TRAITS(PJRT_CopyToDeviceStream_AddChunk_Args, transfer_complete);
typedef PJRT_Error* PJRT_CopyToDeviceStream_AddChunk(
    PJRT_CopyToDeviceStream_AddChunk_Args* args);

typedef struct PJRT_CopyToDeviceStream_TotalBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_CopyToDeviceStream* stream;
  int64_t total_bytes; /* out */
} PJRT_CopyToDeviceStream_TotalBytes_Args;
PJRT_STRUCT_TRAITS(PJRT_CopyToDeviceStream_TotalBytes_Args, total_bytes);
typedef PJRT_Error* PJRT_CopyToDeviceStream_TotalBytes(
    PJRT_CopyToDeviceStream_TotalBytes_Args* args);

typedef struct PJRT_CopyToDeviceStream_GranuleSize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_CopyToDeviceStream* stream;
  int64_t granule_size_in_bytes; /* out */
} PJRT_CopyToDeviceStream_GranuleSize_Args;
PJRT_STRUCT_TRAITS(PJRT_CopyToDeviceStream_GranuleSize_Args,
                   granule_size_in_bytes);
typedef PJRT_Error* PJRT_CopyToDeviceStream_GranuleSize(
    PJRT_CopyToDeviceStream_GranuleSize_Args* args);

typedef struct PJRT_CopyToDeviceStream_CurrentBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_CopyToDeviceStream* stream;
  int64_t current_bytes; /* out */
} PJRT_CopyToDeviceStream_CurrentBytes_Args;
PJRT_STRUCT_TRAITS(PJRT_CopyToDeviceStream_CurrentBytes_Args, current_bytes);
typedef PJRT_Error* PJRT_CopyToDeviceStream_CurrentBytes(
    PJRT_CopyToDeviceStream_CurrentBytes_Args* args);

/* --------------------------------------------------------------- topology */

typedef struct PJRT_TopologyDescription_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* topology_name;
  size_t topology_name_size;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  PJRT_TopologyDescription* topology; /* out */
} PJRT_TopologyDescription_Create_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Create_Args, topology);
typedef PJRT_Error* PJRT_TopologyDescription_Create(
    PJRT_TopologyDescription_Create_Args* args);

typedef struct PJRT_TopologyDescription_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_TopologyDescription* topology;
} PJRT_TopologyDescription_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Destroy_Args, topology);
typedef PJRT_Error* PJRT_TopologyDescription_Destroy(
    PJRT_TopologyDescription_Destroy_Args* args);

typedef struct PJRT_TopologyDescription_PlatformVersion_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_TopologyDescription* topology;
  const char* platform_version; /* out */
  size_t platform_version_size; /* out */
} PJRT_TopologyDescription_PlatformVersion_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_PlatformVersion_Args,
                   platform_version_size);
typedef PJRT_Error* PJRT_TopologyDescription_PlatformVersion(
    PJRT_TopologyDescription_PlatformVersion_Args* args);

typedef struct PJRT_TopologyDescription_PlatformName_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  const char* platform_name; /* out */
  size_t platform_name_size; /* out */
} PJRT_TopologyDescription_PlatformName_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_PlatformName_Args,
                   platform_name_size);
typedef PJRT_Error* PJRT_TopologyDescription_PlatformName(
    PJRT_TopologyDescription_PlatformName_Args* args);

typedef struct PJRT_TopologyDescription_GetDeviceDescriptions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  PJRT_DeviceDescription* const* descriptions; /* out */
  size_t num_descriptions;                     /* out */
} PJRT_TopologyDescription_GetDeviceDescriptions_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_GetDeviceDescriptions_Args,
                   num_descriptions);
typedef PJRT_Error* PJRT_TopologyDescription_GetDeviceDescriptions(
    PJRT_TopologyDescription_GetDeviceDescriptions_Args* args);

typedef struct PJRT_SerializedTopology PJRT_SerializedTopology;

typedef struct PJRT_TopologyDescription_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_TopologyDescription* topology;
  const char* serialized_bytes;                 /* out */
  size_t serialized_bytes_size;                 /* out */
  PJRT_SerializedTopology* serialized_topology; /* out: owns the bytes */
  void (*serialized_topology_deleter)(
      PJRT_SerializedTopology* serialized_topology); /* out */
} PJRT_TopologyDescription_Serialize_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Serialize_Args,
                   serialized_topology_deleter);
typedef PJRT_Error* PJRT_TopologyDescription_Serialize(
    PJRT_TopologyDescription_Serialize_Args* args);

typedef struct PJRT_TopologyDescription_Deserialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* serialized_topology;
  size_t serialized_topology_size;
  PJRT_TopologyDescription* topology; /* out */
} PJRT_TopologyDescription_Deserialize_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Deserialize_Args, topology);
typedef PJRT_Error* PJRT_TopologyDescription_Deserialize(
    PJRT_TopologyDescription_Deserialize_Args* args);

typedef struct PJRT_TopologyDescription_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_TopologyDescription* topology;
  const PJRT_NamedValue* attributes; /* out */
  size_t num_attributes;             /* out */
} PJRT_TopologyDescription_Attributes_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Attributes_Args, num_attributes);
typedef PJRT_Error* PJRT_TopologyDescription_Attributes(
    PJRT_TopologyDescription_Attributes_Args* args);

typedef struct PJRT_TopologyDescription_Fingerprint_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  uint64_t fingerprint; /* out */
} PJRT_TopologyDescription_Fingerprint_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_Fingerprint_Args, fingerprint);
typedef PJRT_Error* PJRT_TopologyDescription_Fingerprint(
    PJRT_TopologyDescription_Fingerprint_Args* args);

/* Serialized xla.ShapeProto as laid out in a given memory space. */
typedef struct PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  int memory_space_kind_id;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Buffer_Type element_type;
  const PJRT_Buffer_MemoryLayout* layout;        /* optional */
  const char* serialized_shape;                  /* out */
  size_t serialized_shape_size;                  /* out */
  void (*serialized_shape_deleter)(const char*); /* out */
} PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args;
PJRT_STRUCT_TRAITS(
    PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args,
    serialized_shape_deleter);
typedef PJRT_Error* PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace(
    PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace_Args* args);

typedef struct PJRT_TopologyDescription_GetMemorySpaceKindIds_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  const int* memory_space_kind_ids; /* out */
  size_t num_memory_space_kind_ids; /* out */
} PJRT_TopologyDescription_GetMemorySpaceKindIds_Args;
PJRT_STRUCT_TRAITS(PJRT_TopologyDescription_GetMemorySpaceKindIds_Args,
                   num_memory_space_kind_ids);
typedef PJRT_Error* PJRT_TopologyDescription_GetMemorySpaceKindIds(
    PJRT_TopologyDescription_GetMemorySpaceKindIds_Args* args);

/* Ahead-of-time compile against a topology; `client` is optional. */
typedef struct PJRT_Compile_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_TopologyDescription* topology;
  const PJRT_Program* program;
  const char* compile_options;
  size_t compile_options_size;
  PJRT_Client* client;
  PJRT_Executable* executable; /* out */
} PJRT_Compile_Args;
PJRT_STRUCT_TRAITS(PJRT_Compile_Args, executable);
typedef PJRT_Error* PJRT_Compile(PJRT_Compile_Args* args);

/* ------------------------------------------------------------- the table */

/* One slot: a pointer to the function type of the same name.  In C++ the
 * type is named with `::` so that naming a member after its type is not a
 * "changes meaning" error under -pedantic; this header must therefore be
 * included at global scope in C++. */
#ifdef __cplusplus
#define PJRT_API_SLOT(fn) ::fn* fn
#else
#define PJRT_API_SLOT(fn) fn* fn
#endif

/* Entry table returned by the plugin's GetPjrtApi().  The slot order is the
 * ABI and slots are only ever appended; comments give the slot index and,
 * for late additions, the minor version that introduced it.  A plugin fills
 * every slot (an unsupported call returns UNIMPLEMENTED) and sets
 * struct_size = PJRT_Api_STRUCT_SIZE, which tells the framework how many
 * slots exist.  Frameworks call PJRT_Error_ForEachPayload on every error
 * when struct_size covers it, so that slot must work. */
typedef struct PJRT_Api {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;

  PJRT_API_SLOT(PJRT_Error_Destroy); /* 0 */
  PJRT_API_SLOT(PJRT_Error_Message); /* 1 */
  PJRT_API_SLOT(PJRT_Error_GetCode); /* 2 */
  PJRT_API_SLOT(PJRT_Plugin_Initialize); /* 3 */
  PJRT_API_SLOT(PJRT_Plugin_Attributes); /* 4 */
  PJRT_API_SLOT(PJRT_Event_Destroy); /* 5 */
  PJRT_API_SLOT(PJRT_Event_IsReady); /* 6 */
  PJRT_API_SLOT(PJRT_Event_Error); /* 7 */
  PJRT_API_SLOT(PJRT_Event_Await); /* 8 */
  PJRT_API_SLOT(PJRT_Event_OnReady); /* 9 */
  PJRT_API_SLOT(PJRT_Client_Create); /* 10 */
  PJRT_API_SLOT(PJRT_Client_Destroy); /* 11 */
  PJRT_API_SLOT(PJRT_Client_PlatformName); /* 12 */
  PJRT_API_SLOT(PJRT_Client_ProcessIndex); /* 13 */
  PJRT_API_SLOT(PJRT_Client_PlatformVersion); /* 14 */
  PJRT_API_SLOT(PJRT_Client_Devices); /* 15 */
  PJRT_API_SLOT(PJRT_Client_AddressableDevices); /* 16 */
  PJRT_API_SLOT(PJRT_Client_LookupDevice); /* 17 */
  PJRT_API_SLOT(PJRT_Client_LookupAddressableDevice); /* 18 */
  PJRT_API_SLOT(PJRT_Client_AddressableMemories); /* 19 */
  PJRT_API_SLOT(PJRT_Client_Compile); /* 20 */
  PJRT_API_SLOT(PJRT_Client_DefaultDeviceAssignment); /* 21 */
  PJRT_API_SLOT(PJRT_Client_BufferFromHostBuffer); /* 22 */
  PJRT_API_SLOT(PJRT_DeviceDescription_Id); /* 23 */
  PJRT_API_SLOT(PJRT_DeviceDescription_ProcessIndex); /* 24 */
  PJRT_API_SLOT(PJRT_DeviceDescription_Attributes); /* 25 */
  PJRT_API_SLOT(PJRT_DeviceDescription_Kind); /* 26 */
  PJRT_API_SLOT(PJRT_DeviceDescription_DebugString); /* 27 */
  PJRT_API_SLOT(PJRT_DeviceDescription_ToString); /* 28 */
  PJRT_API_SLOT(PJRT_Device_GetDescription); /* 29 */
  PJRT_API_SLOT(PJRT_Device_IsAddressable); /* 30 */
  PJRT_API_SLOT(PJRT_Device_LocalHardwareId); /* 31 */
  PJRT_API_SLOT(PJRT_Device_AddressableMemories); /* 32 */
  PJRT_API_SLOT(PJRT_Device_DefaultMemory); /* 33 */
  PJRT_API_SLOT(PJRT_Device_MemoryStats); /* 34 */
  PJRT_API_SLOT(PJRT_Memory_Id); /* 35 */
  PJRT_API_SLOT(PJRT_Memory_Kind); /* 36 */
  PJRT_API_SLOT(PJRT_Memory_DebugString); /* 37 */
  PJRT_API_SLOT(PJRT_Memory_ToString); /* 38 */
  PJRT_API_SLOT(PJRT_Memory_AddressableByDevices); /* 39 */
  PJRT_API_SLOT(PJRT_Executable_Destroy); /* 40 */
  PJRT_API_SLOT(PJRT_Executable_Name); /* 41 */
  PJRT_API_SLOT(PJRT_Executable_NumReplicas); /* 42 */
  PJRT_API_SLOT(PJRT_Executable_NumPartitions); /* 43 */
  PJRT_API_SLOT(PJRT_Executable_NumOutputs); /* 44 */
  PJRT_API_SLOT(PJRT_Executable_SizeOfGeneratedCodeInBytes); /* 45 */
  PJRT_API_SLOT(PJRT_Executable_GetCostAnalysis); /* 46 */
  PJRT_API_SLOT(PJRT_Executable_OutputMemoryKinds); /* 47 */
  PJRT_API_SLOT(PJRT_Executable_OptimizedProgram); /* 48 */
  PJRT_API_SLOT(PJRT_Executable_Serialize); /* 49 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_Destroy); /* 50 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_GetExecutable); /* 51 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_AddressableDevices); /* 52 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_Delete); /* 53 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_IsDeleted); /* 54 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_Execute); /* 55 */
  PJRT_API_SLOT(PJRT_Executable_DeserializeAndLoad); /* 56 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_Fingerprint); /* 57 */
  PJRT_API_SLOT(PJRT_Buffer_Destroy); /* 58 */
  PJRT_API_SLOT(PJRT_Buffer_ElementType); /* 59 */
  PJRT_API_SLOT(PJRT_Buffer_Dimensions); /* 60 */
  PJRT_API_SLOT(PJRT_Buffer_UnpaddedDimensions); /* 61 */
  PJRT_API_SLOT(PJRT_Buffer_DynamicDimensionIndices); /* 62 */
  PJRT_API_SLOT(PJRT_Buffer_GetMemoryLayout); /* 63 */
  PJRT_API_SLOT(PJRT_Buffer_OnDeviceSizeInBytes); /* 64 */
  PJRT_API_SLOT(PJRT_Buffer_Device); /* 65 */
  PJRT_API_SLOT(PJRT_Buffer_Memory); /* 66 */
  PJRT_API_SLOT(PJRT_Buffer_Delete); /* 67 */
  PJRT_API_SLOT(PJRT_Buffer_IsDeleted); /* 68 */
  PJRT_API_SLOT(PJRT_Buffer_CopyToDevice); /* 69 */
  PJRT_API_SLOT(PJRT_Buffer_ToHostBuffer); /* 70 */
  PJRT_API_SLOT(PJRT_Buffer_IsOnCpu); /* 71 */
  PJRT_API_SLOT(PJRT_Buffer_ReadyEvent); /* 72 */
  PJRT_API_SLOT(PJRT_Buffer_UnsafePointer); /* 73 */
  PJRT_API_SLOT(PJRT_Buffer_IncreaseExternalReferenceCount); /* 74 */
  PJRT_API_SLOT(PJRT_Buffer_DecreaseExternalReferenceCount); /* 75 */
  PJRT_API_SLOT(PJRT_Buffer_OpaqueDeviceMemoryDataPointer); /* 76 */
  PJRT_API_SLOT(PJRT_CopyToDeviceStream_Destroy); /* 77 */
  PJRT_API_SLOT(PJRT_CopyToDeviceStream_AddChunk); /* 78 */
  PJRT_API_SLOT(PJRT_CopyToDeviceStream_TotalBytes); /* 79 */
  PJRT_API_SLOT(PJRT_CopyToDeviceStream_GranuleSize); /* 80 */
  PJRT_API_SLOT(PJRT_CopyToDeviceStream_CurrentBytes); /* 81 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Create); /* 82 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Destroy); /* 83 */
  PJRT_API_SLOT(PJRT_TopologyDescription_PlatformName); /* 84 */
  PJRT_API_SLOT(PJRT_TopologyDescription_PlatformVersion); /* 85 */
  PJRT_API_SLOT(PJRT_TopologyDescription_GetDeviceDescriptions); /* 86 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Serialize); /* 87 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Attributes); /* 88 */
  PJRT_API_SLOT(PJRT_Compile); /* 89 */
  /* -- appended after the original 0.x table -- */
  PJRT_API_SLOT(PJRT_Executable_OutputElementTypes); /* 90, since 0.29 */
  PJRT_API_SLOT(PJRT_Executable_OutputDimensions); /* 91, since 0.29 */
  PJRT_API_SLOT(PJRT_Buffer_CopyToMemory); /* 92, since 0.32 */
  PJRT_API_SLOT(PJRT_Client_CreateViewOfDeviceBuffer); /* 93, since 0.33 */
  PJRT_API_SLOT(PJRT_Executable_Fingerprint); /* 94, since 0.35 */
  PJRT_API_SLOT(PJRT_Client_TopologyDescription); /* 95, since 0.36 */
  PJRT_API_SLOT(PJRT_Executable_GetCompiledMemoryStats); /* 96, since 0.40 */
  PJRT_API_SLOT(PJRT_Memory_Kind_Id); /* 97, since 0.48 */
  PJRT_API_SLOT(PJRT_ExecuteContext_Create); /* 98, since 0.52 */
  PJRT_API_SLOT(PJRT_ExecuteContext_Destroy); /* 99 */
  PJRT_API_SLOT(PJRT_Buffer_CopyRawToHost); /* 100, since 0.57 */
  /* 101, since 0.60 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_Destroy);
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferData); /* 102 */
  PJRT_API_SLOT(PJRT_Client_CreateBuffersForAsyncHostToDevice); /* 103 */
  /* 104, since 0.62 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer);
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_Device); /* 105 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferCount); /* 106 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_BufferSize); /* 107 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_SetBufferError); /* 108 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_AddMetadata); /* 109 */
  PJRT_API_SLOT(PJRT_Client_DmaMap); /* 110, since 0.67 */
  PJRT_API_SLOT(PJRT_Client_DmaUnmap); /* 111 */
  PJRT_API_SLOT(PJRT_Client_CreateUninitializedBuffer); /* 112, since 0.68 */
  PJRT_API_SLOT(PJRT_Client_UpdateGlobalProcessInfo); /* 113, since 0.73 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Deserialize); /* 114, since 0.75 */
  PJRT_API_SLOT(PJRT_Client_CreateAliasBuffer); /* 115, since 0.77 */
  PJRT_API_SLOT(PJRT_Client_FulfillAliasBuffer); /* 116 */
  /* 117, since 0.79 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_GetDeviceAssignment);
  PJRT_API_SLOT(PJRT_Client_CreateErrorBuffer); /* 118, since 0.82 */
  /* 119, since 0.83 */
  PJRT_API_SLOT(PJRT_AsyncHostToDeviceTransferManager_TransferLiteral);
  PJRT_API_SLOT(PJRT_Buffer_CopyRawToHostFuture); /* 120, since 0.84 */
  PJRT_API_SLOT(PJRT_Device_PoisonExecution); /* 121, since 0.85 */
  PJRT_API_SLOT(PJRT_Device_CreateAsyncTrackingEvent); /* 122, since 0.86 */
  PJRT_API_SLOT(PJRT_AsyncTrackingEvent_Destroy); /* 123 */
  PJRT_API_SLOT(PJRT_Executable_GetCompileOptions); /* 124, since 0.87 */
  PJRT_API_SLOT(PJRT_Buffer_DonateWithControlDependency); /* 125, since 0.88 */
  PJRT_API_SLOT(PJRT_Event_Create); /* 126, since 0.89 */
  PJRT_API_SLOT(PJRT_Event_Set); /* 127 */
  PJRT_API_SLOT(PJRT_Device_GetAttributes); /* 128, since 0.92 */
  PJRT_API_SLOT(PJRT_Client_Load); /* 129, since 0.95 */
  /* 130, since 0.96 */
  PJRT_API_SLOT(PJRT_LoadedExecutable_AddressableDeviceLogicalIds);
  PJRT_API_SLOT(PJRT_Buffer_Bitcast); /* 131, since 0.98 */
  PJRT_API_SLOT(PJRT_Error_ForEachPayload); /* 132, since 0.99 */
  PJRT_API_SLOT(PJRT_TopologyDescription_Fingerprint); /* 133, since 0.101 */
  PJRT_API_SLOT(PJRT_Executable_ParameterMemoryKinds); /* 134, since 0.102 */
  PJRT_API_SLOT(PJRT_Device_ClearMemoryStats); /* 135, since 0.106 */
  /* 136, since 0.109 */
  PJRT_API_SLOT(PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace);
  /* 137, since 0.110 */
  PJRT_API_SLOT(PJRT_TopologyDescription_GetMemorySpaceKindIds);
} PJRT_Api;

/* Size of the full 0.114 table (1144 bytes on LP64). */
enum {
  PJRT_Api_STRUCT_SIZE =
      PJRT_STRUCT_SIZE(PJRT_Api, PJRT_TopologyDescription_GetMemorySpaceKindIds)
};

/* ------------------------------------------------------ layout self-check */

/* Sizes seen on the wire (LP64 / 64-bit pointers).  The per-args values are
 * the struct_size jaxlib 0.10.2 was observed to pass (API 0.112); for all of
 * these the 0.114 layout is unchanged, except MemoryStats (see below). */
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu

#define PJRT_ABI_CHECK_SIZE(type, bytes) \
  PJRT_ABI_ASSERT(type##_STRUCT_SIZE == (bytes), #type " size changed")

/* The table: 40-byte header, then 138 eight-byte slots. */
PJRT_ABI_ASSERT(sizeof(PJRT_Api) == 1144, "PJRT_Api size");
PJRT_ABI_CHECK_SIZE(PJRT_Api, 1144);
PJRT_ABI_ASSERT(offsetof(PJRT_Api, PJRT_Error_Destroy) == 40,
                "first PJRT_Api slot offset");
PJRT_ABI_ASSERT(offsetof(PJRT_Api, PJRT_Client_Compile) == 40 + 20 * 8,
                "PJRT_Client_Compile slot offset");
PJRT_ABI_ASSERT(offsetof(PJRT_Api, PJRT_Error_ForEachPayload) == 1096,
                "PJRT_Error_ForEachPayload slot offset");
PJRT_ABI_ASSERT(offsetof(PJRT_Api,
                         PJRT_TopologyDescription_GetMemorySpaceKindIds) ==
                    40 + 137 * 8,
                "last PJRT_Api slot offset");

/* Whole-struct sizes of the hot-path structs. */
PJRT_ABI_ASSERT(sizeof(PJRT_Client_Create_Args) == 88, "Client_Create");
PJRT_ABI_ASSERT(sizeof(PJRT_Client_Compile_Args) == 56, "Client_Compile");
PJRT_ABI_ASSERT(sizeof(PJRT_Program) == 48, "Program");
PJRT_ABI_ASSERT(sizeof(PJRT_ExecuteOptions) == 144, "ExecuteOptions");
PJRT_ABI_ASSERT(sizeof(PJRT_LoadedExecutable_Execute_Args) == 80, "Execute");
PJRT_ABI_ASSERT(sizeof(PJRT_Client_BufferFromHostBuffer_Args) == 120,
                "BufferFromHostBuffer");
PJRT_ABI_ASSERT(sizeof(PJRT_Buffer_ToHostBuffer_Args) == 56, "ToHostBuffer");
PJRT_ABI_ASSERT(sizeof(PJRT_NamedValue) == 56, "NamedValue");
PJRT_ABI_CHECK_SIZE(PJRT_NamedValue, 56);
PJRT_ABI_CHECK_SIZE(PJRT_Error, 8);
PJRT_ABI_CHECK_SIZE(PJRT_Memory, 8);
PJRT_ABI_CHECK_SIZE(PJRT_Api_Version, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Extension_Base, 24);

/* struct_size values observed from jaxlib 0.10.2. */
PJRT_ABI_CHECK_SIZE(PJRT_Plugin_Initialize_Args, 16);
PJRT_ABI_CHECK_SIZE(PJRT_Error_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Event_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Event_Error_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Client_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_Delete_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Executable_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_Destroy_Args, 24);
PJRT_ABI_CHECK_SIZE(PJRT_Event_IsReady_Args, 25);
PJRT_ABI_CHECK_SIZE(PJRT_Device_IsAddressable_Args, 25);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_IsDeleted_Args, 25);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_IsOnCpu_Args, 25);
PJRT_ABI_CHECK_SIZE(PJRT_Error_GetCode_Args, 28);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_Id_Args, 28);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_ProcessIndex_Args, 28);
PJRT_ABI_CHECK_SIZE(PJRT_Device_LocalHardwareId_Args, 28);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_ElementType_Args, 28);
PJRT_ABI_CHECK_SIZE(PJRT_Plugin_Attributes_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Client_TopologyDescription_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Device_GetDescription_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Device_DefaultMemory_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_Device_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_Memory_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_ReadyEvent_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Executable_NumOutputs_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Executable_OptimizedProgram_Args, 32);
PJRT_ABI_CHECK_SIZE(PJRT_Error_Message_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Error_ForEachPayload_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Event_OnReady_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_PlatformName_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_PlatformVersion_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_Devices_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_AddressableDevices_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_AddressableMemories_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Client_LookupDevice_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_Attributes_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_Kind_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_DebugString_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_DeviceDescription_ToString_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Device_AddressableMemories_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Memory_Kind_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Memory_ToString_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Memory_AddressableByDevices_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_Dimensions_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_DynamicDimensionIndices_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_AddressableDevices_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_AddressableDeviceLogicalIds_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Executable_Fingerprint_Args, 40);
PJRT_ABI_CHECK_SIZE(PJRT_Executable_OutputMemoryKinds_Args, 48);
PJRT_ABI_CHECK_SIZE(PJRT_Program, 48);
PJRT_ABI_CHECK_SIZE(PJRT_Client_Compile_Args, 56);
PJRT_ABI_CHECK_SIZE(PJRT_Buffer_ToHostBuffer_Args, 56);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_GetDeviceAssignment_Args, 56);
PJRT_ABI_CHECK_SIZE(PJRT_Device_GetAttributes_Args, 56);
PJRT_ABI_CHECK_SIZE(PJRT_LoadedExecutable_Execute_Args, 80);
PJRT_ABI_CHECK_SIZE(PJRT_Client_Create_Args, 88);
PJRT_ABI_CHECK_SIZE(PJRT_Client_BufferFromHostBuffer_Args, 120);
PJRT_ABI_CHECK_SIZE(PJRT_ExecuteOptions, 144);

/* MemoryStats: jaxlib 0.10.2 passes 185 = end of peak_pool_bytes_is_set;
 * the 0.113 fields follow and make the full 0.114 struct 201 bytes. */
PJRT_ABI_ASSERT(PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args,
                                 peak_pool_bytes_is_set) == 185,
                "MemoryStats 0.112 prefix");
PJRT_ABI_CHECK_SIZE(PJRT_Device_MemoryStats_Args, 201);

#undef PJRT_ABI_CHECK_SIZE
#endif /* 64-bit */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_ABI_PJRT_C_API_H_ */
