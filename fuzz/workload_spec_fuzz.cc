// workload_spec_fuzz.cc — libFuzzer target: any byte string read as a workload spec (workload.h)
// must build a valid program or give a clean error naming the field, never a crash, an uncaught
// exception or a sanitizer report. The reader caps model sizes, so no input builds a huge program.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/program.h"
#include "sim/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json spec = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded()) return 0;
  emo::sim::Program p;
  std::string err;
  if (!emo::sim::BuildWorkload(spec, &p, &err)) {
    if (err.empty() || err.find('\n') != std::string::npos) __builtin_trap();  // one line, always
    if (err.rfind("internal error", 0) == 0) __builtin_trap();                 // a generator bug
    return 0;
  }
  if (!emo::sim::Validate(p, &err)) __builtin_trap();
  return 0;
}
