/* The PJRT MemoryDescriptions extension (PJRT_Extension_Type_MemoryDescriptions, version 1): the
 * memory spaces a device description offers (kind and kind id of each, and which is the default),
 * so a framework knows them for a device it has no client for (a topology, ahead-of-time
 * compilation). The descriptions belong to the device description. Layout written from the
 * extension's published C declaration (XLA 753e5e56). */
#ifndef KILN_ABI_PJRT_MEMORY_DESCRIPTIONS_EXTENSION_H_
#define KILN_ABI_PJRT_MEMORY_DESCRIPTIONS_EXTENSION_H_

#include <stddef.h>

#include "abi/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PJRT_API_MEMORY_DESCRIPTIONS_EXTENSION_VERSION 1

typedef struct PJRT_MemoryDescription PJRT_MemoryDescription;

typedef struct PJRT_DeviceDescription_MemoryDescriptions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const PJRT_MemoryDescription* const* memory_descriptions; /* out */
  size_t num_memory_descriptions;                           /* out */
  size_t default_memory_index;                              /* out; -1 when none */
} PJRT_DeviceDescription_MemoryDescriptions_Args;
PJRT_STRUCT_TRAITS(PJRT_DeviceDescription_MemoryDescriptions_Args, default_memory_index);

typedef struct PJRT_MemoryDescription_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_MemoryDescription* memory_description;
  const char* kind; /* out: owned by the description */
  size_t kind_size; /* out */
  int kind_id;      /* out */
} PJRT_MemoryDescription_Kind_Args;
PJRT_STRUCT_TRAITS(PJRT_MemoryDescription_Kind_Args, kind_id);

typedef PJRT_Error* PJRT_DeviceDescription_MemoryDescriptions(
    PJRT_DeviceDescription_MemoryDescriptions_Args* args);
typedef PJRT_Error* PJRT_MemoryDescription_Kind(PJRT_MemoryDescription_Kind_Args* args);

typedef struct PJRT_MemoryDescriptions_Extension {
  PJRT_Extension_Base base;
  PJRT_DeviceDescription_MemoryDescriptions* PJRT_DeviceDescription_MemoryDescriptions;
  PJRT_MemoryDescription_Kind* PJRT_MemoryDescription_Kind;
} PJRT_MemoryDescriptions_Extension;
PJRT_STRUCT_TRAITS(PJRT_MemoryDescriptions_Extension, PJRT_MemoryDescription_Kind);

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_PJRT_MEMORY_DESCRIPTIONS_EXTENSION_H_ */
