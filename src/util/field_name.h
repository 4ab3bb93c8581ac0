// field_name.h — a JSON key as an error message names it: one line, whatever the key holds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace emo {

// The key itself, or, when it holds a control character (a newline, say), its JSON string, quoted
// and escaped, so that an error naming it stays one line.
inline std::string FieldName(const std::string& key) {
  for (unsigned char c : key)
    if (c < 0x20 || c == 0x7f) return nlohmann::json(key).dump();
  return key;
}

}  // namespace emo
