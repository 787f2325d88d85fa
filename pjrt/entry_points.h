// Every PJRT entry point Kiln implements, in PJRT_Api slot order. api_table.cc assigns them;
// KILN_UNIMPLEMENTED_ENTRY_POINTS lists the slots answered by an UNIMPLEMENTED stub
// (unimplemented.cc) and KILN_NULL_ENTRY_POINTS the slots deliberately left NULL (jaxlib
// null-checks them and treats an UNIMPLEMENTED stub as fatal, or they are optional).
#pragma once

#include "abi/pjrt_c_api.h"

// X(Name) for each PJRT_<Name> slot with a real implementation.
#define KILN_IMPLEMENTED_ENTRY_POINTS(X)              \
  X(Executable_Serialize)                             \
  X(Executable_DeserializeAndLoad)                    \
  X(Buffer_UnsafePointer)                             \
  X(Buffer_IncreaseExternalReferenceCount)            \
  X(Buffer_DecreaseExternalReferenceCount)            \
  X(Buffer_OpaqueDeviceMemoryDataPointer)             \
  X(Error_Destroy)                                    \
  X(Error_Message)                                    \
  X(Error_GetCode)                                    \
  X(Plugin_Initialize)                                \
  X(Plugin_Attributes)                                \
  X(Event_Destroy)                                    \
  X(Event_IsReady)                                    \
  X(Event_Error)                                      \
  X(Event_Await)                                      \
  X(Event_OnReady)                                    \
  X(Client_Create)                                    \
  X(Client_Destroy)                                   \
  X(Client_PlatformName)                              \
  X(Client_ProcessIndex)                              \
  X(Client_PlatformVersion)                           \
  X(Client_Devices)                                   \
  X(Client_AddressableDevices)                        \
  X(Client_LookupDevice)                              \
  X(Client_LookupAddressableDevice)                   \
  X(Client_AddressableMemories)                       \
  X(Client_Compile)                                   \
  X(Client_DefaultDeviceAssignment)                   \
  X(Client_BufferFromHostBuffer)                      \
  X(Client_CreateViewOfDeviceBuffer)                  \
  X(DeviceDescription_Id)                             \
  X(DeviceDescription_ProcessIndex)                   \
  X(DeviceDescription_Attributes)                     \
  X(DeviceDescription_Kind)                           \
  X(DeviceDescription_DebugString)                    \
  X(DeviceDescription_ToString)                       \
  X(Device_GetDescription)                            \
  X(Device_IsAddressable)                             \
  X(Device_LocalHardwareId)                           \
  X(Device_AddressableMemories)                       \
  X(Device_DefaultMemory)                             \
  X(Device_MemoryStats)                               \
  X(Memory_Id)                                        \
  X(Memory_Kind)                                      \
  X(Memory_DebugString)                               \
  X(Memory_ToString)                                  \
  X(Memory_AddressableByDevices)                      \
  X(Executable_Destroy)                               \
  X(Executable_Name)                                  \
  X(Executable_NumReplicas)                           \
  X(Executable_NumPartitions)                         \
  X(Executable_NumOutputs)                            \
  X(Executable_SizeOfGeneratedCodeInBytes)            \
  X(Executable_GetCostAnalysis)                       \
  X(Executable_GetCompiledMemoryStats)                \
  X(Executable_OutputMemoryKinds)                     \
  X(LoadedExecutable_Destroy)                         \
  X(LoadedExecutable_GetExecutable)                   \
  X(LoadedExecutable_AddressableDevices)              \
  X(LoadedExecutable_Delete)                          \
  X(LoadedExecutable_IsDeleted)                       \
  X(LoadedExecutable_Execute)                         \
  X(LoadedExecutable_Fingerprint)                     \
  X(Buffer_Destroy)                                   \
  X(Buffer_ElementType)                               \
  X(Buffer_Dimensions)                                \
  X(Buffer_UnpaddedDimensions)                        \
  X(Buffer_DynamicDimensionIndices)                   \
  X(Buffer_GetMemoryLayout)                           \
  X(Buffer_OnDeviceSizeInBytes)                       \
  X(Buffer_Device)                                    \
  X(Buffer_Memory)                                    \
  X(Buffer_Delete)                                    \
  X(Buffer_IsDeleted)                                 \
  X(Buffer_CopyToDevice)                              \
  X(Buffer_ToHostBuffer)                              \
  X(Buffer_IsOnCpu)                                   \
  X(Buffer_ReadyEvent)                                \
  X(Executable_OutputElementTypes)                    \
  X(Executable_OutputDimensions)                      \
  X(Buffer_CopyToMemory)                              \
  X(Executable_Fingerprint)                           \
  X(Client_TopologyDescription)                       \
  X(Memory_Kind_Id)                                   \
  X(Buffer_CopyRawToHost)                             \
  X(AsyncHostToDeviceTransferManager_Destroy)         \
  X(AsyncHostToDeviceTransferManager_TransferData)    \
  X(Client_CreateBuffersForAsyncHostToDevice)         \
  X(AsyncHostToDeviceTransferManager_RetrieveBuffer)  \
  X(AsyncHostToDeviceTransferManager_Device)          \
  X(AsyncHostToDeviceTransferManager_BufferCount)     \
  X(AsyncHostToDeviceTransferManager_BufferSize)      \
  X(AsyncHostToDeviceTransferManager_SetBufferError)  \
  X(AsyncHostToDeviceTransferManager_AddMetadata)     \
  X(Client_CreateUninitializedBuffer)                 \
  X(Client_UpdateGlobalProcessInfo)                   \
  X(LoadedExecutable_GetDeviceAssignment)             \
  X(Client_CreateErrorBuffer)                         \
  X(AsyncHostToDeviceTransferManager_TransferLiteral) \
  X(Executable_GetCompileOptions)                     \
  X(Error_ForEachPayload)                             \
  X(Executable_ParameterMemoryKinds)                  \
  X(ExecuteContext_Create)                            \
  X(ExecuteContext_Destroy)                           \
  X(Executable_OptimizedProgram)                      \
  X(TopologyDescription_Create)                       \
  X(TopologyDescription_Destroy)                      \
  X(TopologyDescription_PlatformName)                 \
  X(TopologyDescription_PlatformVersion)              \
  X(TopologyDescription_GetDeviceDescriptions)        \
  X(TopologyDescription_Serialize)                    \
  X(TopologyDescription_Attributes)                   \
  X(Compile)                                          \
  X(TopologyDescription_Deserialize)                  \
  X(TopologyDescription_Fingerprint)                  \
  X(Device_ClearMemoryStats)

// X(Name) for each PJRT_<Name> slot that returns UNIMPLEMENTED naming the function.
#define KILN_UNIMPLEMENTED_ENTRY_POINTS(X) \
  X(CopyToDeviceStream_Destroy)            \
  X(CopyToDeviceStream_AddChunk)           \
  X(CopyToDeviceStream_TotalBytes)         \
  X(CopyToDeviceStream_GranuleSize)        \
  X(CopyToDeviceStream_CurrentBytes)       \
  X(Client_DmaMap)                         \
  X(Client_DmaUnmap)                       \
  X(Client_CreateAliasBuffer)              \
  X(Client_FulfillAliasBuffer)             \
  X(Buffer_CopyRawToHostFuture)            \
  X(Device_PoisonExecution)                \
  X(Device_CreateAsyncTrackingEvent)       \
  X(AsyncTrackingEvent_Destroy)            \
  X(Buffer_DonateWithControlDependency)

// X(Name) for each PJRT_<Name> slot left NULL on purpose.
#define KILN_NULL_ENTRY_POINTS(X)                         \
  X(Event_Create)                                         \
  X(Event_Set)                                            \
  X(Device_GetAttributes)                                 \
  X(Client_Load)                                          \
  X(LoadedExecutable_AddressableDeviceLogicalIds)         \
  X(Buffer_Bitcast)                                       \
  X(TopologyDescription_MakeCanonicalShapeForMemorySpace) \
  X(TopologyDescription_GetMemorySpaceKindIds)

namespace kiln::pjrt {

// PJRT_Error_Destroy and PJRT_Error_Message return void; every other entry point returns an error.
void Error_Destroy(PJRT_Error_Destroy_Args* args);
void Error_Message(PJRT_Error_Message_Args* args);

#define KILN_DECLARE_ENTRY_POINT(name) PJRT_Error* name(PJRT_##name##_Args* args);
KILN_DECLARE_ENTRY_POINT(Error_GetCode)
KILN_DECLARE_ENTRY_POINT(Error_ForEachPayload)
KILN_DECLARE_ENTRY_POINT(Plugin_Initialize)
KILN_DECLARE_ENTRY_POINT(Plugin_Attributes)
KILN_DECLARE_ENTRY_POINT(Event_Destroy)
KILN_DECLARE_ENTRY_POINT(Event_IsReady)
KILN_DECLARE_ENTRY_POINT(Event_Error)
KILN_DECLARE_ENTRY_POINT(Event_Await)
KILN_DECLARE_ENTRY_POINT(Event_OnReady)
KILN_DECLARE_ENTRY_POINT(Client_Create)
KILN_DECLARE_ENTRY_POINT(Client_Destroy)
KILN_DECLARE_ENTRY_POINT(Client_PlatformName)
KILN_DECLARE_ENTRY_POINT(Client_ProcessIndex)
KILN_DECLARE_ENTRY_POINT(Client_PlatformVersion)
KILN_DECLARE_ENTRY_POINT(Client_Devices)
KILN_DECLARE_ENTRY_POINT(Client_AddressableDevices)
KILN_DECLARE_ENTRY_POINT(Client_LookupDevice)
KILN_DECLARE_ENTRY_POINT(Client_LookupAddressableDevice)
KILN_DECLARE_ENTRY_POINT(Client_AddressableMemories)
KILN_DECLARE_ENTRY_POINT(Client_Compile)
KILN_DECLARE_ENTRY_POINT(Client_DefaultDeviceAssignment)
KILN_DECLARE_ENTRY_POINT(Client_BufferFromHostBuffer)
KILN_DECLARE_ENTRY_POINT(Client_CreateViewOfDeviceBuffer)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_Id)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_ProcessIndex)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_Attributes)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_Kind)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_DebugString)
KILN_DECLARE_ENTRY_POINT(DeviceDescription_ToString)
KILN_DECLARE_ENTRY_POINT(Device_GetDescription)
KILN_DECLARE_ENTRY_POINT(Device_IsAddressable)
KILN_DECLARE_ENTRY_POINT(Device_LocalHardwareId)
KILN_DECLARE_ENTRY_POINT(Device_AddressableMemories)
KILN_DECLARE_ENTRY_POINT(Device_DefaultMemory)
KILN_DECLARE_ENTRY_POINT(Device_MemoryStats)
KILN_DECLARE_ENTRY_POINT(Buffer_UnsafePointer)
KILN_DECLARE_ENTRY_POINT(Executable_Serialize)
KILN_DECLARE_ENTRY_POINT(Executable_DeserializeAndLoad)
KILN_DECLARE_ENTRY_POINT(Buffer_IncreaseExternalReferenceCount)
KILN_DECLARE_ENTRY_POINT(Buffer_DecreaseExternalReferenceCount)
KILN_DECLARE_ENTRY_POINT(Buffer_OpaqueDeviceMemoryDataPointer)
KILN_DECLARE_ENTRY_POINT(Memory_Id)
KILN_DECLARE_ENTRY_POINT(Memory_Kind)
KILN_DECLARE_ENTRY_POINT(Memory_DebugString)
KILN_DECLARE_ENTRY_POINT(Memory_ToString)
KILN_DECLARE_ENTRY_POINT(Memory_AddressableByDevices)
KILN_DECLARE_ENTRY_POINT(Executable_Destroy)
KILN_DECLARE_ENTRY_POINT(Executable_Name)
KILN_DECLARE_ENTRY_POINT(Executable_NumReplicas)
KILN_DECLARE_ENTRY_POINT(Executable_NumPartitions)
KILN_DECLARE_ENTRY_POINT(Executable_NumOutputs)
KILN_DECLARE_ENTRY_POINT(Executable_SizeOfGeneratedCodeInBytes)
KILN_DECLARE_ENTRY_POINT(Executable_GetCostAnalysis)
KILN_DECLARE_ENTRY_POINT(Executable_GetCompiledMemoryStats)
KILN_DECLARE_ENTRY_POINT(Executable_OutputMemoryKinds)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_Destroy)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_GetExecutable)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_AddressableDevices)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_Delete)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_IsDeleted)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_Execute)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_Fingerprint)
KILN_DECLARE_ENTRY_POINT(Buffer_Destroy)
KILN_DECLARE_ENTRY_POINT(Buffer_ElementType)
KILN_DECLARE_ENTRY_POINT(Buffer_Dimensions)
KILN_DECLARE_ENTRY_POINT(Buffer_UnpaddedDimensions)
KILN_DECLARE_ENTRY_POINT(Buffer_DynamicDimensionIndices)
KILN_DECLARE_ENTRY_POINT(Buffer_GetMemoryLayout)
KILN_DECLARE_ENTRY_POINT(Buffer_OnDeviceSizeInBytes)
KILN_DECLARE_ENTRY_POINT(Buffer_Device)
KILN_DECLARE_ENTRY_POINT(Buffer_Memory)
KILN_DECLARE_ENTRY_POINT(Buffer_Delete)
KILN_DECLARE_ENTRY_POINT(Buffer_IsDeleted)
KILN_DECLARE_ENTRY_POINT(Buffer_CopyToDevice)
KILN_DECLARE_ENTRY_POINT(Buffer_ToHostBuffer)
KILN_DECLARE_ENTRY_POINT(Buffer_IsOnCpu)
KILN_DECLARE_ENTRY_POINT(Buffer_ReadyEvent)
KILN_DECLARE_ENTRY_POINT(Executable_OutputElementTypes)
KILN_DECLARE_ENTRY_POINT(Executable_OutputDimensions)
KILN_DECLARE_ENTRY_POINT(Buffer_CopyToMemory)
KILN_DECLARE_ENTRY_POINT(Executable_Fingerprint)
KILN_DECLARE_ENTRY_POINT(Client_TopologyDescription)
KILN_DECLARE_ENTRY_POINT(Memory_Kind_Id)
KILN_DECLARE_ENTRY_POINT(Buffer_CopyRawToHost)
KILN_DECLARE_ENTRY_POINT(Client_CreateUninitializedBuffer)
KILN_DECLARE_ENTRY_POINT(Client_UpdateGlobalProcessInfo)
KILN_DECLARE_ENTRY_POINT(LoadedExecutable_GetDeviceAssignment)
KILN_DECLARE_ENTRY_POINT(Client_CreateErrorBuffer)
KILN_DECLARE_ENTRY_POINT(Executable_GetCompileOptions)
KILN_DECLARE_ENTRY_POINT(Executable_ParameterMemoryKinds)
KILN_DECLARE_ENTRY_POINT(ExecuteContext_Create)
KILN_DECLARE_ENTRY_POINT(ExecuteContext_Destroy)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_Destroy)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_TransferData)
KILN_DECLARE_ENTRY_POINT(Client_CreateBuffersForAsyncHostToDevice)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_RetrieveBuffer)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_Device)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_BufferCount)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_BufferSize)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_SetBufferError)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_AddMetadata)
KILN_DECLARE_ENTRY_POINT(AsyncHostToDeviceTransferManager_TransferLiteral)
KILN_DECLARE_ENTRY_POINT(Executable_OptimizedProgram)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Create)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Destroy)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_PlatformName)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_PlatformVersion)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_GetDeviceDescriptions)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Serialize)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Attributes)
KILN_DECLARE_ENTRY_POINT(Compile)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Deserialize)
KILN_DECLARE_ENTRY_POINT(TopologyDescription_Fingerprint)
KILN_DECLARE_ENTRY_POINT(Device_ClearMemoryStats)
KILN_UNIMPLEMENTED_ENTRY_POINTS(KILN_DECLARE_ENTRY_POINT)
#undef KILN_DECLARE_ENTRY_POINT

}  // namespace kiln::pjrt
