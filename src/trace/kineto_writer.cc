// kineto_writer.cc — Kineto Chrome-trace JSON writer: plain appends into one reserved string,
// integer nanoseconds formatted as microseconds with three decimals (no floating point).
#include "trace/kineto_writer.h"

#include <filesystem>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace emo {
namespace {

// Appends JSON text to one string. Numbers go through std::to_chars; strings are escaped.
class Out {
 public:
  explicit Out(std::string* s) : s_(s) {}

  Out& Raw(std::string_view v) {
    s_->append(v);
    return *this;
  }
  Out& Int(int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s_->append(buf, static_cast<size_t>(r.ptr - buf));
    return *this;
  }
  // Integer nanoseconds as microseconds with exactly three decimals: 1234567 -> 1234.567.
  Out& Micros(int64_t ns) {
    char buf[32];
    char* p = buf;
    uint64_t u = static_cast<uint64_t>(ns);
    if (ns < 0) {
      *p++ = '-';
      u = ~u + 1;  // magnitude, also for INT64_MIN
    }
    p = std::to_chars(p, buf + sizeof buf, u / 1000).ptr;
    unsigned frac = static_cast<unsigned>(u % 1000);
    p[0] = '.';
    p[1] = static_cast<char>('0' + frac / 100);
    p[2] = static_cast<char>('0' + frac / 10 % 10);
    p[3] = static_cast<char>('0' + frac % 10);
    s_->append(buf, static_cast<size_t>(p + 4 - buf));
    return *this;
  }
  // The shortest decimal that reads back as the same double; null where JSON has no number for it.
  Out& Num(double v) {
    if (!std::isfinite(v)) return Raw("null");
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s_->append(buf, static_cast<size_t>(r.ptr - buf));
    return *this;
  }
  // A quoted, escaped JSON string. Invalid UTF-8 bytes become U+FFFD so the output stays valid.
  Out& Str(std::string_view v);

 private:
  std::string* s_;
};

// 0: copy as is; 1: escape ('"', '\\', control characters); 2: start of a multi-byte sequence.
constexpr std::array<uint8_t, 256> kEscape = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 1;
  t['"'] = t['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) t[c] = 2;
  return t;
}();

// Length of the valid UTF-8 sequence starting at p[0] (>= 0x80), or 0 if it is invalid.
size_t Utf8Length(const unsigned char* p, size_t n) {
  unsigned char c = p[0];
  auto cont = [&](size_t i, unsigned char lo, unsigned char hi) { return i < n && p[i] >= lo && p[i] <= hi; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;  // no overlongs, no surrogates
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;  // <= U+10FFFF
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

Out& Out::Str(std::string_view v) {
  static constexpr char kHex[] = "0123456789abcdef";
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v.data());
  const size_t n = v.size();
  s_->push_back('"');
  size_t run = 0;  // start of the pending run of bytes copied as they are
  for (size_t i = 0; i < n;) {
    uint8_t cls = kEscape[p[i]];
    if (cls == 0) {
      ++i;
      continue;
    }
    if (cls == 2) {
      size_t len = Utf8Length(p + i, n - i);
      if (len) {
        i += len;
        continue;
      }
    }
    s_->append(v.data() + run, i - run);
    unsigned char c = p[i];
    if (cls == 2) {
      s_->append("\\ufffd");
    } else if (c == '"' || c == '\\') {
      s_->push_back('\\');
      s_->push_back(static_cast<char>(c));
    } else {
      char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      s_->append(e, 6);
    }
    run = ++i;
  }
  s_->append(v.data() + run, n - run);
  s_->push_back('"');
  return *this;
}

// Floor division, also for negative times.
int64_t FloorTo(int64_t v, int64_t unit) {
  int64_t q = v / unit;
  if (v % unit != 0 && v < 0) --q;
  return q * unit;
}

// (key, value) pairs sorted by key: the first value added with a given key, by binary search.
class Index {
 public:
  void Add(int64_t key, int64_t value) { v_.emplace_back(key, value); }
  void Sort() {
    std::stable_sort(v_.begin(), v_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // The value of the first entry added with `key`, or `missing`.
  int64_t Find(int64_t key, int64_t missing = -1) const {
    auto it = std::lower_bound(v_.begin(), v_.end(), key, [](const auto& e, int64_t k) { return e.first < k; });
    return it != v_.end() && it->first == key ? it->second : missing;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> v_;
};

constexpr const char* SyncName(SyncKind k) {
  switch (k) {
    case SyncKind::kStreamSync:
      return "Stream Sync";
    case SyncKind::kEventSync:
      return "Event Sync";
    case SyncKind::kContextSync:
      return "Context Sync";
    case SyncKind::kStreamWaitEvent:
      return "Stream Wait Event";
  }
  return "Stream Sync";
}

void Write(const Trace& trace, const RankTrace& r, std::string_view trace_name, std::string* text) {
  const StringTable& names = trace.names;
  text->clear();

  // Reserve: fixed bytes per event plus the names (escaping rarely grows them much).
  size_t name_bytes = 0;
  for (const auto& c : r.calls) name_bytes += names.Get(c.name).size();
  for (const auto& o : r.ops) name_bytes += names.Get(o.name).size() + names.Get(o.process_group).size();
  size_t samples = 0;
  for (const CounterTrack& c : r.counters) samples += c.t_ns.size();
  text->reserve(1024 + name_bytes + r.calls.size() * 300 + r.ops.size() * 400 + r.syncs.size() * 400 +
                r.iterations.size() * 200 + r.threads.size() * 200 + samples * 100);

  // Base time: the earliest time floored to a whole second, so every ts is small.
  bool any = false;
  int64_t earliest = 0;
  auto see = [&](int64_t t) {
    if (!any || t < earliest) earliest = t;
    any = true;
  };
  for (const auto& c : r.calls) see(c.start_ns);
  for (const auto& o : r.ops) see(o.start_ns);
  for (const auto& it : r.iterations) see(it.start_ns);
  for (const CounterTrack& c : r.counters)
    for (int64_t t : c.t_ns) see(t);
  const int64_t base = any ? FloorTo(earliest, 1000000000) : 0;

  // Lookups: the first call and the first (earliest, as ops are sorted by start) op of each
  // correlation; the device of each stream.
  Index call_by_corr, op_by_corr, device_by_stream;
  for (uint32_t i = 0; i < r.calls.size(); ++i)
    if (r.calls[i].correlation >= 0) call_by_corr.Add(r.calls[i].correlation, i);
  for (uint32_t i = 0; i < r.ops.size(); ++i) {
    if (r.ops[i].correlation >= 0) op_by_corr.Add(r.ops[i].correlation, i);
    device_by_stream.Add(r.ops[i].stream, r.ops[i].device);
  }
  call_by_corr.Sort();
  op_by_corr.Sort();
  device_by_stream.Sort();
  const int64_t main_device = r.ops.empty() ? 0 : r.ops[0].device;

  Out o(text);
  o.Raw("{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ")
      .Int(r.rank)
      .Raw(", \"world_size\": ")
      .Int(r.world_size)
      .Raw("},\n  \"deviceProperties\": [");
  if (!r.gpu_name.empty()) o.Raw("{\"id\": ").Int(main_device).Raw(", \"name\": ").Str(r.gpu_name).Raw("}");
  o.Raw("],\n  \"traceName\": ").Str(trace_name);
  if (r.windowed) o.Raw(",\n  \"emoWindow\": {\"kernelsBefore\": ").Int(r.kernels_before).Raw("}");
  o.Raw(",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ").Int(base);
  o.Raw(",\n  \"traceEvents\": [\n");

  bool first_event = true;
  auto begin_event = [&]() -> Out& {
    o.Raw(first_event ? "  {" : ",\n  {");
    first_event = false;
    return o;
  };

  // Metadata: name every CPU process/thread and every GPU device/stream used.
  std::vector<int64_t> cpu_pids;
  for (const auto& t : r.threads)
    if (std::find(cpu_pids.begin(), cpu_pids.end(), t.pid) == cpu_pids.end()) cpu_pids.push_back(t.pid);
  for (int64_t pid : cpu_pids)
    begin_event()
        .Raw("\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ")
        .Int(pid)
        .Raw(", \"tid\": 0, \"ts\": 0.000, \"args\": {\"name\": \"python\"}}");
  for (const auto& t : r.threads)
    begin_event()
        .Raw("\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ")
        .Int(t.pid)
        .Raw(", \"tid\": ")
        .Int(t.tid)
        .Raw(", \"ts\": 0.000, \"args\": {\"name\": \"thread ")
        .Int(t.tid)
        .Raw("\"}}");
  std::vector<std::pair<int64_t, int64_t>> gpu_tracks;  // (device, stream)
  gpu_tracks.reserve(r.ops.size() + r.syncs.size());
  for (const auto& op : r.ops) gpu_tracks.emplace_back(op.device, op.stream);
  auto sync_device = [&](const SyncRecord& s) { return device_by_stream.Find(s.stream, main_device); };
  for (const auto& s : r.syncs) gpu_tracks.emplace_back(sync_device(s), s.stream);
  std::sort(gpu_tracks.begin(), gpu_tracks.end());
  gpu_tracks.erase(std::unique(gpu_tracks.begin(), gpu_tracks.end()), gpu_tracks.end());
  for (size_t i = 0; i < gpu_tracks.size(); ++i) {
    auto [device, stream] = gpu_tracks[i];
    if (i == 0 || gpu_tracks[i - 1].first != device)
      begin_event()
          .Raw("\"ph\": \"M\", \"name\": \"process_name\", \"pid\": ")
          .Int(device)
          .Raw(", \"tid\": 0, \"ts\": 0.000, \"args\": {\"name\": \"GPU ")
          .Int(device)
          .Raw("\"}}");
    begin_event()
        .Raw("\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": ")
        .Int(device)
        .Raw(", \"tid\": ")
        .Int(stream)
        .Raw(", \"ts\": 0.000, \"args\": {\"name\": \"stream ")
        .Int(stream)
        .Raw("\"}}");
  }

  // Iterations, on the first thread.
  const ThreadId main_thread = r.threads.empty() ? ThreadId{} : r.threads[0];
  for (const auto& it : r.iterations)
    begin_event()
        .Raw("\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#")
        .Int(it.step)
        .Raw("\", \"pid\": ")
        .Int(main_thread.pid)
        .Raw(", \"tid\": ")
        .Int(main_thread.tid)
        .Raw(", \"ts\": ")
        .Micros(it.start_ns - base)
        .Raw(", \"dur\": ")
        .Micros(it.end_ns - it.start_ns)
        .Raw(", \"args\": {}}");

  // Counters, each sample an event on its GPU's process (written "ph" first: the importer reads a
  // counter's args only once it knows the event is one).
  for (const CounterTrack& c : r.counters)
    for (size_t i = 0; i < c.t_ns.size(); ++i)
      begin_event()
          .Raw("\"ph\": \"C\", \"name\": ")
          .Str(c.name)
          .Raw(", \"pid\": ")
          .Int(c.device)
          .Raw(", \"ts\": ")
          .Micros(c.t_ns[i] - base)
          .Raw(", \"args\": {")
          .Str(c.unit)
          .Raw(": ")
          .Num(c.value[i])
          .Raw("}}");

  // CPU calls, grouped by thread in thread order (stable, so each thread keeps its order), so
  // that the importer meets the threads in the order of their indices.
  std::vector<uint32_t> order(r.calls.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!std::is_sorted(r.calls.begin(), r.calls.end(),
                      [](const CpuCall& a, const CpuCall& b) { return a.thread < b.thread; }))
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return r.calls[a].thread < r.calls[b].thread; });
  for (uint32_t i : order) {
    const CpuCall& c = r.calls[i];
    const ThreadId t = c.thread < r.threads.size() ? r.threads[c.thread] : ThreadId{};
    begin_event()
        .Raw("\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": ")
        .Str(names.Get(c.name))
        .Raw(", \"pid\": ")
        .Int(t.pid)
        .Raw(", \"tid\": ")
        .Int(t.tid)
        .Raw(", \"ts\": ")
        .Micros(c.start_ns - base)
        .Raw(", \"dur\": ")
        .Micros(c.end_ns - c.start_ns)
        .Raw(", \"args\": {\"correlation\": ")
        .Int(c.correlation)
        .Raw(", \"cbid\": 0}}");
    // Flow start, on the first call of a correlation that launched GPU work.
    if (c.correlation >= 0 && call_by_corr.Find(c.correlation) == i && op_by_corr.Find(c.correlation) >= 0)
      begin_event()
          .Raw("\"ph\": \"s\", \"id\": ")
          .Int(c.correlation)
          .Raw(", \"pid\": ")
          .Int(t.pid)
          .Raw(", \"tid\": ")
          .Int(t.tid)
          .Raw(", \"ts\": ")
          .Micros(c.start_ns - base)
          .Raw(", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
  }

  // GPU ops.
  for (uint32_t i = 0; i < r.ops.size(); ++i) {
    const GpuOp& op = r.ops[i];
    const char* cat = op.kind == GpuOpKind::kKernel   ? "kernel"
                      : op.kind == GpuOpKind::kMemcpy ? "gpu_memcpy"
                                                      : "gpu_memset";
    begin_event()
        .Raw("\"ph\": \"X\", \"cat\": \"")
        .Raw(cat)
        .Raw("\", \"name\": ")
        .Str(names.Get(op.name))
        .Raw(", \"pid\": ")
        .Int(op.device)
        .Raw(", \"tid\": ")
        .Int(op.stream)
        .Raw(", \"ts\": ")
        .Micros(op.start_ns - base)
        .Raw(", \"dur\": ")
        .Micros(op.end_ns - op.start_ns)
        .Raw(", \"args\": {");
    if (op.kind == GpuOpKind::kKernel) o.Raw("\"queued\": 0, ");
    o.Raw("\"device\": ")
        .Int(op.device)
        .Raw(", \"stream\": ")
        .Int(op.stream)
        .Raw(", \"correlation\": ")
        .Int(op.correlation);
    if (op.kind == GpuOpKind::kKernel && op.is_comm && op.process_group != 0) {
      o.Raw(", \"Process Group Name\": ").Str(names.Get(op.process_group));
      if (op.bytes >= 0) o.Raw(", \"In msg nelems\": ").Int(op.bytes).Raw(", \"dtype\": \"Byte\"");
    } else {
      if (op.process_group != 0) o.Raw(", \"Process Group Name\": ").Str(names.Get(op.process_group));
      if (op.bytes >= 0) o.Raw(", \"bytes\": ").Int(op.bytes);
    }
    o.Raw("}}");
    if (op.correlation >= 0 && op_by_corr.Find(op.correlation) == i && call_by_corr.Find(op.correlation) >= 0)
      begin_event()
          .Raw("\"ph\": \"f\", \"id\": ")
          .Int(op.correlation)
          .Raw(", \"pid\": ")
          .Int(op.device)
          .Raw(", \"tid\": ")
          .Int(op.stream)
          .Raw(", \"ts\": ")
          .Micros(op.start_ns - base)
          .Raw(", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}");
  }

  // Synchronisation records, timed as their API call.
  for (const auto& s : r.syncs) {
    const int64_t ci = s.correlation >= 0 ? call_by_corr.Find(s.correlation) : -1;
    const int64_t start = ci >= 0 ? r.calls[static_cast<size_t>(ci)].start_ns : base;
    const int64_t end = ci >= 0 ? r.calls[static_cast<size_t>(ci)].end_ns : base;
    const int64_t device = sync_device(s);
    const char* kind = SyncName(s.kind);
    begin_event()
        .Raw("\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"")
        .Raw(kind)
        .Raw("\", \"pid\": ")
        .Int(device)
        .Raw(", \"tid\": ")
        .Int(s.stream)
        .Raw(", \"ts\": ")
        .Micros(start - base)
        .Raw(", \"dur\": ")
        .Micros(end - start)
        .Raw(", \"args\": {\"cuda_sync_kind\": \"")
        .Raw(kind)
        .Raw("\", \"stream\": ")
        .Int(s.stream)
        .Raw(", \"wait_on_stream\": ")
        .Int(s.wait_on_stream)
        .Raw(", \"wait_on_cuda_event_record_corr_id\": ")
        .Int(s.record_correlation)
        .Raw(", \"wait_on_cuda_event_id\": ")
        .Int(s.event_id)
        .Raw(", \"correlation\": ")
        .Int(s.correlation)
        .Raw(", \"device\": ")
        .Int(device)
        .Raw("}}");
  }

  o.Raw(first_event ? "  ]\n}\n" : "\n  ]\n}\n");
}

bool WritePlain(const std::string& tmp, const std::string& text, std::string* err) {
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    *err = tmp + ": " + std::strerror(errno);
    return false;
  }
  size_t n = std::fwrite(text.data(), 1, text.size(), f);
  int werr = n == text.size() ? 0 : errno;
  if (std::fclose(f) != 0 && werr == 0) werr = errno ? errno : EIO;
  if (n != text.size() || werr != 0) {
    *err = tmp + ": write failed: " + std::strerror(werr ? werr : EIO);
    return false;
  }
  return true;
}

bool WriteGzip(const std::string& tmp, const std::string& text, std::string* err) {
  gzFile f = gzopen(tmp.c_str(), "wb1");  // fast compression: traces are large
  if (!f) {
    *err = tmp + ": " + std::strerror(errno ? errno : ENOMEM);
    return false;
  }
  bool ok = true;
  for (size_t off = 0; ok && off < text.size();) {
    unsigned piece = static_cast<unsigned>(std::min<size_t>(text.size() - off, 1u << 30));
    ok = gzwrite(f, text.data() + off, piece) == static_cast<int>(piece);
    off += piece;
  }
  int zerr = Z_OK;
  std::string what = ok ? "" : gzerror(f, &zerr);
  if (gzclose(f) != Z_OK && ok) {
    ok = false;
    what = "gzip close failed";
  }
  if (!ok) *err = tmp + ": write failed: " + what;
  return ok;
}

}  // namespace

void WriteKinetoJson(const Trace& trace, size_t rank_index, std::string* out) {
  out->clear();
  if (rank_index >= trace.ranks.size()) return;
  const RankTrace& r = trace.ranks[rank_index];
  std::string name = r.source.empty() ? "emo-rank-" + std::to_string(r.rank) : r.source;
  Write(trace, r, name, out);
}

bool WriteKinetoJson(const Trace& trace, size_t rank_index, const std::string& path, std::string* err) {
  if (rank_index >= trace.ranks.size()) {
    *err = path + ": no rank " + std::to_string(rank_index) + " (the trace has " + std::to_string(trace.ranks.size()) +
           ")";
    return false;
  }
  std::string text;
  Write(trace, trace.ranks[rank_index], path, &text);
  const std::string tmp = path + ".tmp";
  bool ok = path.ends_with(".gz") ? WriteGzip(tmp, text, err) : WritePlain(tmp, text, err);
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": cannot rename " + tmp + " to it: " + std::strerror(errno);
    ok = false;
  }
  if (!ok) std::remove(tmp.c_str());
  return ok;
}

bool WriteKinetoTraces(const Trace& trace, const std::string& out, std::string* err) {
  if (trace.ranks.size() == 1) return WriteKinetoJson(trace, 0, out, err);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    *err = out + ": " + ec.message();
    return false;
  }
  for (size_t r = 0; r < trace.ranks.size(); ++r)
    if (!WriteKinetoJson(trace, r, out + "/rank-" + std::to_string(r) + ".json", err)) return false;
  return true;
}

}  // namespace emo
