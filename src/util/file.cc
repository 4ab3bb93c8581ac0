// file.cc — whole-file reads with transparent gzip inflation (zlib).
#include "util/file.h"

#include <zlib.h>

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

}  // namespace emo
