// file.cc — whole-file and streaming reads with transparent gzip inflation (zlib).
#include "util/file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace emo {

static bool ReadRaw(const std::string& path, std::string* out, std::string* err) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  out->clear();
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    if (size > 0) out->reserve(static_cast<size_t>(size) + kReadPadding);
    std::fseek(f, 0, SEEK_SET);
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) {
    *err = path + ": read error";
    return false;
  }
  return true;
}

static bool Inflate(const std::string& path, const std::string& gz, std::string* out, std::string* err) {
  // The gzip trailer's ISIZE (size mod 2^32) is a good first guess for the output size.
  size_t guess = gz.size() * 8;
  if (gz.size() >= 4) {
    const unsigned char* t = reinterpret_cast<const unsigned char*>(gz.data() + gz.size() - 4);
    size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<size_t>(t[3]) << 24);
    if (isize > gz.size()) guess = isize;
  }
  out->clear();
  out->resize(guess + kReadPadding);
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    *err = path + ": zlib init failed";
    return false;
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  size_t produced = 0;
  int rc = Z_OK;
  for (;;) {
    if (out->size() - produced < kReadPadding + 1) out->resize(out->size() * 2);
    zs.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    size_t room = out->size() - kReadPadding - produced;
    zs.avail_out = static_cast<uInt>(room > (1u << 30) ? (1u << 30) : room);
    uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // concatenated gzip members
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      rc = Z_DATA_ERROR;
      *err = path + ": truncated gzip stream after " + std::to_string(produced) + " decompressed bytes";
      inflateEnd(&zs);
      return false;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      *err = path + ": corrupt gzip data at compressed byte " + std::to_string(zs.total_in) +
             (zs.msg ? std::string(" (") + zs.msg + ")" : std::string());
      inflateEnd(&zs);
      return false;
    }
  }
  inflateEnd(&zs);
  out->resize(produced);
  out->reserve(produced + kReadPadding);
  return true;
}

bool ReadFileMaybeGz(const std::string& path, std::string* out, std::string* err) {
  std::string raw;
  if (!ReadRaw(path, &raw, err)) return false;
  if (raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f && static_cast<unsigned char>(raw[1]) == 0x8b)
    return Inflate(path, raw, out, err);
  *out = std::move(raw);
  if (out->capacity() < out->size() + kReadPadding) out->reserve(out->size() + kReadPadding);
  return true;
}

struct ByteStream::Gzip {
  z_stream zs{};
  std::string in;       // compressed bytes not yet consumed
  bool file_eof = false;
  bool ended = false;   // the last member's end was seen with no input after it
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
      if (g.zs.avail_in == 0 && g.file_eof) g.ended = true;
      else inflateReset(&g.zs);  // concatenated gzip members
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

}  // namespace emo
