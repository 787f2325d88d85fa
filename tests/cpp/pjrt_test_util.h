// Shared helpers for tests that drive Kiln through the PJRT C API.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "abi/pjrt_c_api.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace kiln::pjrt_test {

struct Outcome {
  PJRT_Error_Code code = PJRT_Error_Code_OK;
  std::string message;
  bool ok() const { return code == PJRT_Error_Code_OK; }
};

// Reads and destroys `error` (NULL = OK).
Outcome Take(PJRT_Error* error) {
  Outcome out;
  if (error == nullptr) return out;
  PJRT_Error_GetCode_Args code{};
  code.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
  code.error = error;
  PJRT_Error* code_error = GetPjrtApi()->PJRT_Error_GetCode(&code);
  EXPECT_EQ(code_error, nullptr);
  out.code = code.code;
  PJRT_Error_Message_Args msg{};
  msg.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  msg.error = error;
  GetPjrtApi()->PJRT_Error_Message(&msg);
  out.message.assign(msg.message, msg.message_size);
  PJRT_Error_ForEachPayload_Args payload{};
  payload.struct_size = PJRT_Error_ForEachPayload_Args_STRUCT_SIZE;
  payload.error = error;
  payload.visitor = [](const char*, size_t, const char*, size_t, void*) {
    ADD_FAILURE() << "unexpected payload";
  };
  EXPECT_EQ(GetPjrtApi()->PJRT_Error_ForEachPayload(&payload), nullptr);
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  GetPjrtApi()->PJRT_Error_Destroy(&destroy);
  return out;
}

}  // namespace kiln::pjrt_test
