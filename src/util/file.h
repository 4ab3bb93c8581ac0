// file.h — reads a whole file into memory, inflating gzip transparently (by its magic bytes),
// with the tail padding that simdjson needs for in-place parsing.
#pragma once

#include <string>

namespace emo {

// Extra bytes reserved past the data: at least simdjson::SIMDJSON_PADDING.
inline constexpr size_t kReadPadding = 64;

// On success *out holds the (decompressed) bytes and out->capacity() >= size + kReadPadding.
// On failure returns false and sets *err to "PATH: what went wrong".
bool ReadFileMaybeGz(const std::string& path, std::string* out, std::string* err);

}  // namespace emo
