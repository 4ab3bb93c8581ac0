// file.h — input helpers: whole-file reads, and a stream that yields a file's bytes piece by
// piece, inflating gzip transparently (detected by its magic bytes), so that multi-gigabyte
// traces are never held in memory whole.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

namespace emo {

// On success *out holds the (decompressed) bytes.
// On failure returns false and sets *err to "PATH: what went wrong".
bool ReadFileMaybeGz(const std::string& path, std::string* out, std::string* err);

// The bytes of a memory buffer or of a file (gzip or plain), in pieces.
class ByteStream {
 public:
  static constexpr size_t kPiece = 1 << 20;  // bytes appended per Read

  ByteStream(const char* data, size_t size);  // reads from memory
  ByteStream();                               // reads from Open()'s file
  ~ByteStream();
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  bool Open(const std::string& path, std::string* err);
  // Appends up to kPiece bytes to *out; sets *eof once the input is exhausted. Returns false
  // with *err ("PATH: ...") on a read error or corrupt/truncated gzip data.
  bool Read(std::string* out, bool* eof, std::string* err);

 private:
  struct Gzip;
  const char* mem_ = nullptr;
  size_t mem_size_ = 0, mem_pos_ = 0;
  FILE* file_ = nullptr;
  std::string path_;
  std::unique_ptr<Gzip> gz_;
  uint64_t produced_ = 0;
};

}  // namespace emo
