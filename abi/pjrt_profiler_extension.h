/* The PJRT Profiler extension (PJRT_Extension_Type_Profiler) and the plugin profiler API it
 * carries (PLUGIN_Profiler_Api, version 1), as jaxlib 0.10.2 uses them: when a plugin is
 * registered, jaxlib finds this extension on its PJRT_Api and registers a tracer that, for each
 * profiling session (`jax.profiler.trace`), creates a profiler, starts and stops it, and merges
 * the planes of the serialized tensorflow.profiler.XSpace that collect_data returns into the
 * session's trace.
 *
 * jaxlib's tracer sets no struct_size in the create/start/stop/destroy/collect_data arguments (a
 * plugin must not read it there), checks PLUGIN_Profiler_Api's struct_size for equality with
 * PLUGIN_Profiler_Api_STRUCT_SIZE, and calls collect_data once with buffer NULL, then reads
 * buffer_size_in_bytes bytes at `buffer`: the plugin points `buffer` at memory it owns. Older
 * tracers call it a second time with a buffer of their own to fill. Layout written from the
 * published C declarations. */
#ifndef KILN_ABI_PJRT_PROFILER_EXTENSION_H_
#define KILN_ABI_PJRT_PROFILER_EXTENSION_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PLUGIN_PROFILER_VERSION 1

typedef struct PLUGIN_Profiler PLUGIN_Profiler;
typedef struct PLUGIN_Profiler_Error PLUGIN_Profiler_Error;

typedef struct PLUGIN_Profiler_Error_Destroy_Args {
  size_t struct_size;
  void* priv;
  PLUGIN_Profiler_Error* error; /* may be NULL */
} PLUGIN_Profiler_Error_Destroy_Args;

typedef struct PLUGIN_Profiler_Error_Message_Args {
  size_t struct_size;
  void* priv;
  const PLUGIN_Profiler_Error* error;
  const char* message; /* out: lives as long as `error` */
  size_t message_size; /* out */
} PLUGIN_Profiler_Error_Message_Args;

typedef struct PLUGIN_Profiler_Error_GetCode_Args {
  size_t struct_size;
  void* priv;
  const PLUGIN_Profiler_Error* error;
  int code; /* out: an absl::StatusCode value */
} PLUGIN_Profiler_Error_GetCode_Args;

typedef struct PLUGIN_Profiler_Create_Args {
  size_t struct_size;
  const char* options; /* a serialized tensorflow.ProfileOptions */
  size_t options_size;
  PLUGIN_Profiler* profiler; /* out */
} PLUGIN_Profiler_Create_Args;

typedef struct PLUGIN_Profiler_Destroy_Args {
  size_t struct_size;
  PLUGIN_Profiler* profiler;
} PLUGIN_Profiler_Destroy_Args;

typedef struct PLUGIN_Profiler_Start_Args {
  size_t struct_size;
  PLUGIN_Profiler* profiler;
} PLUGIN_Profiler_Start_Args;

typedef struct PLUGIN_Profiler_Stop_Args {
  size_t struct_size;
  PLUGIN_Profiler* profiler;
} PLUGIN_Profiler_Stop_Args;

typedef struct PLUGIN_Profiler_CollectData_Args {
  size_t struct_size;
  PLUGIN_Profiler* profiler;
  uint8_t* buffer;             /* in/out */
  size_t buffer_size_in_bytes; /* out */
} PLUGIN_Profiler_CollectData_Args;

typedef void PLUGIN_Profiler_Error_Destroy(PLUGIN_Profiler_Error_Destroy_Args* args);
typedef void PLUGIN_Profiler_Error_Message(PLUGIN_Profiler_Error_Message_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Error_GetCode(
    PLUGIN_Profiler_Error_GetCode_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Create(PLUGIN_Profiler_Create_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Destroy(PLUGIN_Profiler_Destroy_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Start(PLUGIN_Profiler_Start_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_Stop(PLUGIN_Profiler_Stop_Args* args);
typedef PLUGIN_Profiler_Error* PLUGIN_Profiler_CollectData(PLUGIN_Profiler_CollectData_Args* args);

typedef struct PLUGIN_Profiler_Api {
  size_t struct_size;
  void* priv;
  PLUGIN_Profiler_Error_Destroy* error_destroy;
  PLUGIN_Profiler_Error_Message* error_message;
  PLUGIN_Profiler_Error_GetCode* error_get_code;
  PLUGIN_Profiler_Create* create;
  PLUGIN_Profiler_Destroy* destroy;
  PLUGIN_Profiler_Start* start;
  PLUGIN_Profiler_Stop* stop;
  PLUGIN_Profiler_CollectData* collect_data;
} PLUGIN_Profiler_Api;

/* Up to and including collect_data (every field). */
#define PLUGIN_Profiler_Api_STRUCT_SIZE \
  (offsetof(PLUGIN_Profiler_Api, collect_data) + sizeof(PLUGIN_Profiler_CollectData*))

#define PJRT_API_PROFILER_EXTENSION_VERSION 1

typedef struct PJRT_Profiler_Extension {
  PJRT_Extension_Base base;
  PLUGIN_Profiler_Api* profiler_api;
  /* Set by a framework that passes this extension to Compile or Execute to link its trace
   * events; on the PJRT_Api it is unused. */
  int64_t traceme_context_id;
} PJRT_Profiler_Extension;

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_PJRT_PROFILER_EXTENSION_H_ */
