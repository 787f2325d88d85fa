/* The PJRT Layouts extension (PJRT_Extension_Type_Layouts, version 4): the on-device layout of a
 * buffer, a client's or topology's default layout for an array type, and the layouts a compiled
 * executable wants its parameters in and gives its outputs in. A framework that finds it also
 * knows the plugin reads `mhlo.layout_mode` attributes. A layout is an opaque object; its only
 * readable form is its serialization, the text of an xla::Layout such as "{1,0}". Layouts from
 * Buffer_MemoryLayout and the GetDefaultLayout calls belong to the caller (MemoryLayout_Destroy);
 * the arrays of the executable calls belong to the executable. Layout written from the
 * extension's published C declaration (XLA 753e5e56). */
#ifndef KILN_ABI_PJRT_LAYOUTS_EXTENSION_H_
#define KILN_ABI_PJRT_LAYOUTS_EXTENSION_H_

#include <stddef.h>
#include <stdint.h>

#include "abi/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PJRT_API_LAYOUTS_EXTENSION_VERSION 4

typedef struct PJRT_Layouts_MemoryLayout PJRT_Layouts_MemoryLayout;
typedef struct PJRT_Layouts_SerializedLayout PJRT_Layouts_SerializedLayout;

typedef struct PJRT_Layouts_MemoryLayout_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Layouts_MemoryLayout* layout;
} PJRT_Layouts_MemoryLayout_Destroy_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_MemoryLayout_Destroy_Args, layout);

typedef struct PJRT_Layouts_MemoryLayout_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Layouts_MemoryLayout* layout;
  const char* serialized_bytes;                    /* out: owned by serialized_layout */
  size_t serialized_bytes_size;                    /* out */
  PJRT_Layouts_SerializedLayout* serialized_layout; /* out */
  void (*serialized_layout_deleter)(PJRT_Layouts_SerializedLayout* serialized); /* out */
} PJRT_Layouts_MemoryLayout_Serialize_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_MemoryLayout_Serialize_Args, serialized_layout_deleter);

typedef struct PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Layouts_MemoryLayout* layout; /* out: the caller destroys it */
} PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args, layout);

typedef struct PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Layouts_MemoryLayout* layout; /* out: the caller destroys it */
} PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args, layout);

typedef struct PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_TopologyDescription* topology_description;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  PJRT_Layouts_MemoryLayout* layout; /* out: the caller destroys it */
} PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args, layout);

typedef struct PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;                 /* out */
  PJRT_Layouts_MemoryLayout** layouts; /* out: owned by the executable */
} PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args, layouts);

typedef struct PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_parameters;              /* out */
  PJRT_Layouts_MemoryLayout** layouts; /* out: owned by the executable */
} PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args;
PJRT_STRUCT_TRAITS(PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args, layouts);

typedef PJRT_Error* PJRT_Layouts_MemoryLayout_Destroy(PJRT_Layouts_MemoryLayout_Destroy_Args* args);
typedef PJRT_Error* PJRT_Layouts_MemoryLayout_Serialize(
    PJRT_Layouts_MemoryLayout_Serialize_Args* args);
typedef PJRT_Error* PJRT_Layouts_PJRT_Client_GetDefaultLayout(
    PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args* args);
typedef PJRT_Error* PJRT_Layouts_PJRT_Buffer_MemoryLayout(
    PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args* args);
typedef PJRT_Error* PJRT_Layouts_PJRT_Topology_GetDefaultLayout(
    PJRT_Layouts_PJRT_Topology_GetDefaultLayout_Args* args);
typedef PJRT_Error* PJRT_Layouts_PJRT_Executable_GetOutputLayouts(
    PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args* args);
typedef PJRT_Error* PJRT_Layouts_PJRT_Executable_GetParameterLayouts(
    PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args* args);

typedef struct PJRT_Layouts_Extension {
  PJRT_Extension_Base base;
  PJRT_Layouts_MemoryLayout_Destroy* PJRT_Layouts_MemoryLayout_Destroy;
  PJRT_Layouts_MemoryLayout_Serialize* PJRT_Layouts_MemoryLayout_Serialize;
  PJRT_Layouts_PJRT_Client_GetDefaultLayout* PJRT_Layouts_PJRT_Client_GetDefaultLayout;
  PJRT_Layouts_PJRT_Buffer_MemoryLayout* PJRT_Layouts_PJRT_Buffer_MemoryLayout;
  PJRT_Layouts_PJRT_Topology_GetDefaultLayout* PJRT_Layouts_PJRT_Topology_GetDefaultLayout;
  PJRT_Layouts_PJRT_Executable_GetOutputLayouts* PJRT_Layouts_PJRT_Executable_GetOutputLayouts;
  PJRT_Layouts_PJRT_Executable_GetParameterLayouts*
      PJRT_Layouts_PJRT_Executable_GetParameterLayouts;
} PJRT_Layouts_Extension;
PJRT_STRUCT_TRAITS(PJRT_Layouts_Extension, PJRT_Layouts_PJRT_Executable_GetParameterLayouts);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_PJRT_LAYOUTS_EXTENSION_H_ */
