// device_json_fuzz.cc — libFuzzer target for the files EMO reads from devices and its own tools:
// device profiles (model/device_profile.h), the pack profiler's range and result files
// (device/range_file.h), the NCCL profiler plugin's records (trace/nccl_records.h), emo profile's
// pack metrics read by hash (model/pack_profile.h) and on-demand trace requests
// (trace/trace_control.h). The first byte picks the reader; the rest must parse or give a clean error, never a crash,
// an uncaught exception or a sanitizer report; what parses writes back as JSON that parses again, the same.
#include <cstdint>
#include <string>
#include <vector>

#include "device/range_file.h"
#include "model/device_profile.h"
#include "model/pack_profile.h"
#include "trace/nccl_records.h"
#include "trace/trace_control.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string err;
  switch (data[0] % 6) {
    case 0: {
      emo::DeviceProfile p, again;
      if (!emo::ParseProfile("fuzz.json", text, &p, &err)) break;
      if (!emo::ParseProfile("again.json", emo::ProfileJson(p), &again, &err)) __builtin_trap();
      if (again.clocks_mhz != p.clocks_mhz) __builtin_trap();
      return 0;
    }
    case 1: {
      std::vector<emo::KernelRange> r, again;
      if (!emo::ParseRanges(text, &r, &err)) break;
      if (!emo::ParseRanges(emo::RangesJson(r), &again, &err) || again.size() != r.size()) __builtin_trap();
      return 0;
    }
    case 2: {
      emo::ProfileResult r, again;
      if (!emo::ParseProfileResult(text, &r, &err)) break;
      if (!emo::ParseProfileResult(emo::ProfileResultJson(r), &again, &err) || again.ranges.size() != r.ranges.size())
        __builtin_trap();
      return 0;
    }
    case 4: {
      std::vector<emo::KnownPack> known;
      if (emo::ParseKnownPacks("fuzz.json", text, &known, &err)) return 0;
      break;
    }
    case 5: {
      emo::TraceRequest r;
      if (emo::ParseTraceRequest(text, &r, &err)) return 0;
      break;
    }
    default: {
      emo::NcclRecords r;
      if (emo::ParseNcclRecords("fuzz.jsonl", text, &r, &err)) return 0;
      break;
    }
  }
  if (err.empty()) __builtin_trap();  // a refusal names what is wrong
  return 0;
}
