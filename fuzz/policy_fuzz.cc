// policy_fuzz.cc — libFuzzer target: any byte string read as a frequency policy (device/frequency_policy.h)
// must parse or give a clean error, never a crash, an uncaught exception or a sanitizer report;
// what parses writes back as JSON that parses to the same policy.
#include <cstdint>
#include <string>

#include "device/frequency_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  emo::FrequencyPolicy policy;
  std::string err;
  if (!emo::ParsePolicy("fuzz.json", text, &policy, &err)) {
    if (err.empty()) __builtin_trap();
    return 0;
  }
  emo::FrequencyPolicy again;
  if (!emo::ParsePolicy("again.json", emo::PolicyJson(policy), &again, &err)) __builtin_trap();
  if (again.gpus.size() != policy.gpus.size()) __builtin_trap();
  return 0;
}
