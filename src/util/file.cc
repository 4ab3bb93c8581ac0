// file.cc — whole-file and streaming reads with transparent gzip inflation: Intel ISA-L's igzip
// where the build found it (about three times zlib's speed), else zlib.
#include "util/file.h"

#ifdef EMO_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#include <zlib.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace emo {

// One gzip inflater over the file's members, fed compressed pieces.
struct ByteStream::Gzip {
  std::string in;    // compressed bytes not yet consumed
  uint64_t fed = 0;  // compressed bytes handed to the inflater so far
  bool file_eof = false;
  bool ended = false;  // the last member's end was seen with no input after it

  enum Step { kMore, kMemberEnd, kCorrupt };
#ifdef EMO_HAVE_ISAL
  inflate_state st;
  bool Init() {
    isal_inflate_init(&st);
    st.crc_flag = ISAL_GZIP;
    return true;
  }
  void Feed(const char* p, size_t n) {
    st.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(p));
    st.avail_in = static_cast<uint32_t>(n);
    fed += n;
  }
  size_t avail_in() const { return st.avail_in; }
  // Inflates into out[0, cap): *made bytes.
  Step Inflate(char* out, size_t cap, size_t* made, std::string* what) {
    st.next_out = reinterpret_cast<uint8_t*>(out);
    st.avail_out = static_cast<uint32_t>(cap);
    const int rc = isal_inflate(&st);
    *made = cap - st.avail_out;
    if (rc < 0) {
      *what = rc == ISAL_INCORRECT_CHECKSUM ? "CRC mismatch" : "isal_inflate error " + std::to_string(rc);
      return kCorrupt;
    }
    return st.block_state == ISAL_BLOCK_FINISH ? kMemberEnd : kMore;
  }
  void NextMember() {
    isal_inflate_reset(&st);
    st.crc_flag = ISAL_GZIP;
  }
#else
  z_stream zs{};
  bool Init() { return inflateInit2(&zs, 15 + 32) == Z_OK; }
  ~Gzip() { inflateEnd(&zs); }
  void Feed(const char* p, size_t n) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
    zs.avail_in = static_cast<uInt>(n);
    fed += n;
  }
  size_t avail_in() const { return zs.avail_in; }
  Step Inflate(char* out, size_t cap, size_t* made, std::string* what) {
    zs.next_out = reinterpret_cast<Bytef*>(out);
    zs.avail_out = static_cast<uInt>(cap);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    *made = cap - zs.avail_out;
    if (rc == Z_STREAM_END) return kMemberEnd;
    if (rc == Z_OK || rc == Z_BUF_ERROR) return kMore;
    *what = zs.msg ? zs.msg : "zlib error " + std::to_string(rc);
    return kCorrupt;
  }
  void NextMember() { inflateReset(&zs); }
#endif
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
    if (!gz_->Init()) {
      *err = path + ": gzip inflater init failed";
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
    if (g.avail_in() == 0 && !g.file_eof) {
      g.in.resize(1 << 18);
      size_t n = std::fread(g.in.data(), 1, g.in.size(), file_);
      g.in.resize(n);
      g.file_eof = n == 0 || std::feof(file_);
      if (std::ferror(file_)) {
        *err = path_ + ": read error";
        return false;
      }
      g.Feed(g.in.data(), n);
    }
    size_t made = 0;
    std::string what;
    const Gzip::Step step = g.Inflate(out->data() + old + filled, kPiece - filled, &made, &what);
    filled += made;
    produced_ += made;
    if (step == Gzip::kCorrupt) {
      *err =
          path_ + ": corrupt gzip data at compressed byte " + std::to_string(g.fed - g.avail_in()) + " (" + what + ")";
      return false;
    }
    if (step == Gzip::kMemberEnd) {
      if (g.avail_in() == 0 && g.file_eof)
        g.ended = true;
      else
        g.NextMember();  // concatenated gzip members
    } else if (made == 0 && g.avail_in() == 0 && g.file_eof) {
      *err = path_ + ": truncated gzip stream after " + std::to_string(produced_) + " decompressed bytes";
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
