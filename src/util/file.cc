// file.cc — whole-file and streaming reads with transparent gzip inflation (zlib).
#include "util/file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace emo {

struct ByteStream::Gzip {
  z_stream zs{};
  std::string in;  // compressed bytes not yet consumed
  bool file_eof = false;
  bool ended = false;  // the last member's end was seen with no input after it
  ~Gzip() { inflateEnd(&zs); }
};

ByteStream::ByteStream(const char* data, size_t size) : mem_(data), mem_size_(size) {}
ByteStream::ByteStream() = default;
ByteStream::~ByteStream() {
  if (file_) std::fclose(file_);
}

bool ByteStream::Open(const std::string& path, std::string* err) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "rb");
  if (!file_) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  unsigned char magic[2] = {0, 0};
  size_t n = std::fread(magic, 1, 2, file_);
  std::rewind(file_);
  if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gz_ = std::make_unique<Gzip>();
    if (inflateInit2(&gz_->zs, 15 + 32) != Z_OK) {
      *err = path + ": zlib init failed";
      return false;
    }
  }
  return true;
}

bool ByteStream::Read(std::string* out, bool* eof, std::string* err) {
  *eof = false;
  if (mem_) {
    size_t n = std::min(kPiece, mem_size_ - mem_pos_);
    out->append(mem_ + mem_pos_, n);
    mem_pos_ += n;
    *eof = mem_pos_ == mem_size_;
    return true;
  }
  if (!file_) {
    *eof = true;
    return true;
  }
  if (!gz_) {
    size_t old = out->size();
    out->resize(old + kPiece);
    size_t n = std::fread(out->data() + old, 1, kPiece, file_);
    out->resize(old + n);
    if (std::ferror(file_)) {
      *err = path_ + ": read error";
      return false;
    }
    *eof = n < kPiece && std::feof(file_);
    return true;
  }
  Gzip& g = *gz_;
  size_t old = out->size();
  out->resize(old + kPiece);
  size_t filled = 0;
  while (filled < kPiece && !g.ended) {
    if (g.zs.avail_in == 0 && !g.file_eof) {
      g.in.resize(1 << 18);
      size_t n = std::fread(g.in.data(), 1, g.in.size(), file_);
      g.in.resize(n);
      g.file_eof = n == 0 || std::feof(file_);
      if (std::ferror(file_)) {
        *err = path_ + ": read error";
        return false;
      }
      g.zs.next_in = reinterpret_cast<Bytef*>(g.in.data());
      g.zs.avail_in = static_cast<uInt>(n);
    }
    g.zs.next_out = reinterpret_cast<Bytef*>(out->data() + old + filled);
    g.zs.avail_out = static_cast<uInt>(kPiece - filled);
    uInt before = g.zs.avail_out;
    int rc = inflate(&g.zs, Z_NO_FLUSH);
    filled += before - g.zs.avail_out;
    produced_ += before - g.zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (g.zs.avail_in == 0 && g.file_eof)
        g.ended = true;
      else
        inflateReset(&g.zs);  // concatenated gzip members
    } else if (rc == Z_BUF_ERROR && g.zs.avail_in == 0 && g.file_eof) {
      *err = path_ + ": truncated gzip stream after " + std::to_string(produced_) + " decompressed bytes";
      return false;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      *err = path_ + ": corrupt gzip data at compressed byte " + std::to_string(g.zs.total_in) +
             (g.zs.msg ? std::string(" (") + g.zs.msg + ")" : std::string());
      return false;
    }
  }
  out->resize(old + filled);
  *eof = g.ended;
  return true;
}

bool ReadFileMaybeGz(const std::string& path, std::string* out, std::string* err) {
  ByteStream in;
  if (!in.Open(path, err)) return false;
  out->clear();
  for (bool eof = false; !eof;)
    if (!in.Read(out, &eof, err)) return false;
  return true;
}

}  // namespace emo
