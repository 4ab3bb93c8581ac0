// kineto_json.cc — streaming (simdjson On-Demand) reader for Kineto Chrome-trace JSON.
#include "trace/kineto_json.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/file.h"

namespace emo {
namespace {

namespace od = simdjson::ondemand;

// Fields of one trace event that matter; views point into the parser's buffers.
struct RawEvent {
  std::string_view ph, cat, name;
  int64_t pid = 0, tid = 0;
  int64_t ts_ns = 0, dur_ns = 0;
  bool has_ts = false;
  // args
  int64_t correlation = -1, stream = -1, device = -1, bytes = -1;
  int64_t wait_on_stream = -1, record_corr = -1, event_id = -1;
  int64_t in_nelems = -1;
  std::string_view sync_kind, process_group, dtype;
  // A counter event's ("ph": "C") first numeric arg, read when "ph" comes before "args".
  std::string_view counter_key;
  double counter_value = 0;
};

// A raw JSON token without trailing whitespace and, if it is a string, its quotes.
std::string_view Unquote(std::string_view tok) {
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t'))
    tok.remove_suffix(1);
  if (tok.size() >= 2 && tok.front() == '"' && tok.back() == '"') tok = tok.substr(1, tok.size() - 2);
  return tok;
}

// Parses a JSON number token in microseconds into integer nanoseconds without going through
// double, so that 1712195495520883.123 keeps its nanoseconds.
bool MicrosToNanos(std::string_view tok, int64_t* out) {
  tok = Unquote(tok);
  if (tok.empty()) return false;
  bool neg = tok.front() == '-';
  if (neg) tok.remove_prefix(1);
  size_t dot = tok.find('.');
  std::string_view ip = tok.substr(0, dot);
  if (tok.find_first_of("eE") != std::string_view::npos) {  // rare: exponent form
    std::string s(tok);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(v) || std::fabs(v) > 9e15) return false;
    *out = static_cast<int64_t>(std::llround(v * 1000.0)) * (neg ? -1 : 1);
    return true;
  }
  int64_t us = 0;
  if (ip.empty()) return false;
  auto r = std::from_chars(ip.data(), ip.data() + ip.size(), us);
  if (r.ec != std::errc() || r.ptr != ip.data() + ip.size() || us > INT64_MAX / 1000 - 1) return false;
  int64_t ns = us * 1000;
  if (dot != std::string_view::npos) {
    std::string_view frac = tok.substr(dot + 1);
    int64_t scale = 100;
    for (size_t i = 0; i < frac.size(); ++i) {
      char c = frac[i];
      if (c < '0' || c > '9') return false;
      if (i < 3)
        ns += (c - '0') * scale, scale /= 10;
      else if (i == 3 && c >= '5')
        ns += 1;  // round half up at the nanosecond
    }
  }
  *out = neg ? -ns : ns;
  return true;
}

// Reads an integer that Kineto may have written as a number, a float or a quoted string.
bool ReadInt(od::value v, int64_t* out) {
  auto type = v.type();
  if (type.error()) return false;
  switch (type.value_unsafe()) {
    case od::json_type::number: {
      od::number n;
      if (v.get_number().get(n)) return false;
      if (n.is_int64())
        *out = n.get_int64();
      else if (n.is_uint64())
        *out = static_cast<int64_t>(n.get_uint64());
      else {
        double d = n.get_double();
        if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return false;
        *out = static_cast<int64_t>(d);
      }
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s)) return false;
      auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
      return r.ec == std::errc();
    }
    default:
      return false;
  }
}

// An integer token, possibly quoted ("1711964646000000000" or 1711964646000000000).
bool ParseIntToken(std::string_view tok, int64_t* out) {
  tok = Unquote(tok);
  auto r = std::from_chars(tok.data(), tok.data() + tok.size(), *out);
  return r.ec == std::errc() && r.ptr == tok.data() + tok.size();
}

int64_t DtypeBytes(std::string_view t) {
  if (t == "Float" || t == "Int" || t == "float32" || t == "int32") return 4;
  if (t == "Half" || t == "BFloat16" || t == "Short") return 2;
  if (t == "Double" || t == "Long" || t == "int64" || t == "float64") return 8;
  if (t == "Byte" || t == "Char" || t == "Bool" || t == "int8" || t == "uint8") return 1;
  return -1;
}

// Reads the top-level object with a light scanner and hands the events to simdjson On-Demand in
// chunks of about kChunk bytes, so that memory stays bounded by the chunk, not the file: the
// scanner tracks only strings and nesting to find where each event ends; simdjson validates and
// parses each chunk, and each other top-level value, fully.
class Parser {
 public:
  Parser(std::string_view source, ByteStream* in, Trace* trace, std::string* err,
         std::function<void(uint64_t)> progress = {})
      : source_(source), in_(in), trace_(trace), err_(err), progress_(std::move(progress)) {}

  bool Run();

 private:
  static constexpr size_t kChunk = 1 << 20;

  // Errors name the absolute byte offset in the (decompressed) input.
  bool FailAt(size_t abs, const std::string& what) {
    if (!failed_) *err_ = std::string(source_) + ": byte " + std::to_string(abs) + ": " + what;
    failed_ = true;
    return false;
  }
  bool Fail(size_t i, const std::string& what) { return FailAt(base_ + i, what); }
  // simdjson errors inside the buffer `doc_text_` that starts at absolute offset doc_base_.
  bool FailDoc(simdjson::error_code e, const std::string& what) {
    const char* loc = nullptr;
    size_t abs = doc_base_;
    if (!doc_.current_location().get(loc) && loc >= doc_text_.data() && loc <= doc_text_.data() + doc_text_.size())
      abs += static_cast<size_t>(loc - doc_text_.data());
    return FailAt(abs - (doc_wrapped_ && abs > doc_base_ ? 1 : 0), what + " (" + simdjson::error_message(e) + ")");
  }
  // Makes buf_[i] available, reading more input as needed; false at the end of input.
  bool Ensure(size_t i) {
    while (i >= buf_.size()) {
      if (eof_ || failed_) return false;
      if (!in_->Read(&buf_, &eof_, err_)) {
        failed_ = true;
        return false;
      }
    }
    return true;
  }
  bool Truncated(size_t i, const char* what) {
    return failed_ ? false : Fail(i, std::string("unexpected end of input ") + what);
  }
  bool SkipSpace(size_t* i) {
    for (;;) {
      if (!Ensure(*i)) return false;
      char c = buf_[*i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return true;
      ++*i;
    }
  }
  bool SkipString(size_t* i);
  bool SkipValue(size_t* i);
  // Drops the bytes before buf_[keep] once they are no longer needed.
  void Compact(size_t* keep) {
    if (*keep < kChunk) return;
    buf_.erase(0, *keep);
    base_ += *keep;
    *keep = 0;
    if (progress_ && base_ >= next_progress_) {
      progress_(base_);
      next_progress_ = base_ + (uint64_t{256} << 20);
    }
  }
  bool ParseDoc(size_t begin, size_t end, bool wrap_array);
  bool TopLevelValue(std::string_view key);
  bool StreamEvents(size_t* i);
  bool ParseEventChunk();
  bool ParseEvent(od::object ev, RawEvent* e);
  bool ParseArgs(od::object args, RawEvent* e);
  bool Store(const RawEvent& e);

  std::string_view source_;
  ByteStream* in_;
  Trace* trace_;
  std::string* err_;
  std::function<void(uint64_t)> progress_;
  uint64_t next_progress_ = uint64_t{256} << 20;
  bool failed_ = false;
  std::string buf_;  // input window: bytes [base_, base_ + buf_.size())
  size_t base_ = 0;
  bool eof_ = false;
  std::string doc_text_;  // one chunk or value handed to simdjson, padded
  size_t doc_base_ = 0;   // absolute offset of doc_text_[0] (of the byte after '[' when wrapped)
  bool doc_wrapped_ = false;
  od::parser parser_;
  od::document doc_;
  RankTrace rank_;
  int64_t base_ns_ = 0;
  int64_t event_index_ = 0;
};

#define EMO_TRY(expr, what)                             \
  do {                                                  \
    if (auto _e = (expr); _e) return FailDoc(_e, what); \
  } while (0)

bool Parser::SkipString(size_t* i) {
  size_t start = *i, j = *i + 1;
  for (;;) {
    const void* q = j < buf_.size() ? std::memchr(buf_.data() + j, '"', buf_.size() - j) : nullptr;
    if (!q) {
      j = buf_.size();
      if (!Ensure(j)) return Truncated(start, "inside a string");
      continue;
    }
    size_t k = static_cast<size_t>(static_cast<const char*>(q) - buf_.data());
    size_t b = k;
    while (b > start + 1 && buf_[b - 1] == '\\') --b;
    if ((k - b) % 2 == 0) {
      *i = k + 1;
      return true;
    }
    j = k + 1;
  }
}

// Character classes for the scanner.
enum : uint8_t { kPlain = 0, kQuote, kOpen, kClose, kEnd };  // kEnd: ',' or whitespace
constexpr std::array<uint8_t, 256> kClass = [] {
  std::array<uint8_t, 256> t{};
  t['"'] = kQuote;
  t['{'] = t['['] = kOpen;
  t['}'] = t[']'] = kClose;
  t[','] = t[' '] = t['\n'] = t['\r'] = t['\t'] = kEnd;
  return t;
}();

// Moves *i past one JSON value (a scalar, or a balanced object/array).
bool Parser::SkipValue(size_t* i) {
  const size_t start = *i;
  int depth = 0;
  size_t k = *i;
  for (;;) {
    if (!Ensure(k)) return Truncated(start, "inside a value");
    const char* p = buf_.data();
    const size_t n = buf_.size();
    while (k < n) {
      switch (kClass[static_cast<unsigned char>(p[k])]) {
        case kPlain:
          ++k;
          continue;
        case kOpen:
          ++depth, ++k;
          continue;
        case kClose:
          if (depth == 0) {
            *i = k;
            return k > start ? true : Fail(k, "expected a value");
          }
          ++k;
          if (--depth == 0) {
            *i = k;
            return true;
          }
          continue;
        case kEnd:
          if (depth > 0) {
            ++k;
            continue;
          }
          *i = k;
          return k > start ? true : Fail(k, "expected a value");
      }
      // kQuote: SkipString may read more input, so the buffer is fetched again.
      if (!SkipString(&k)) return false;
      if (depth == 0) {
        *i = k;
        return true;
      }
      break;
    }
  }
}

// Hands buf_[begin, end) to simdjson (as "[...]" when wrap_array).
bool Parser::ParseDoc(size_t begin, size_t end, bool wrap_array) {
  doc_text_.clear();
  doc_text_.reserve(end - begin + 2 + simdjson::SIMDJSON_PADDING);
  if (wrap_array) doc_text_ += '[';
  doc_text_.append(buf_, begin, end - begin);
  if (wrap_array) doc_text_ += ']';
  doc_base_ = base_ + begin;
  doc_wrapped_ = wrap_array;
  simdjson::padded_string_view view(doc_text_.data(), doc_text_.size(), doc_text_.capacity());
  if (auto e = parser_.iterate(view).get(doc_); e)
    return FailAt(doc_base_, std::string("not JSON (") + simdjson::error_message(e) + ")");
  return true;
}

bool Parser::Run() {
  rank_.source = std::string(source_);
  rank_.rank = static_cast<int32_t>(trace_->ranks.size());
  size_t i = 0;
  if (!SkipSpace(&i)) return Truncated(i, "before the top-level object");
  if (buf_[i] != '{') return Fail(i, "top level is not a JSON object");
  ++i;
  bool saw_events = false;
  for (bool first = true;; first = false) {
    if (!SkipSpace(&i)) return Truncated(i, "in the top-level object");
    if (buf_[i] == '}' && first) break;
    if (!first) {
      if (buf_[i] == '}') break;
      if (buf_[i] != ',') return Fail(i, "expected ',' or '}' in the top-level object");
      ++i;
      if (!SkipSpace(&i)) return Truncated(i, "in the top-level object");
    }
    if (buf_[i] != '"') return Fail(i, "expected a key in the top-level object");
    size_t key_begin = i;
    if (!SkipString(&i)) return false;
    std::string key = buf_.substr(key_begin + 1, i - key_begin - 2);
    if (!SkipSpace(&i)) return Truncated(i, "after a key");
    if (buf_[i] != ':') return Fail(i, "expected ':' after key \"" + key + "\"");
    ++i;
    if (!SkipSpace(&i)) return Truncated(i, "after a key");
    if (key == "traceEvents") {
      if (buf_[i] != '[') return Fail(i, "traceEvents is not an array");
      if (!StreamEvents(&i)) return false;
      saw_events = true;
    } else {
      size_t begin = i;
      if (!SkipValue(&i)) return false;
      if (key == "distributedInfo" || key == "deviceProperties" || key == "baseTimeNanoseconds" || key == "host_name" ||
          key == "emoWindow") {
        if (!ParseDoc(begin, i, false) || !TopLevelValue(key)) return false;
      }
      Compact(&i);
    }
  }
  ++i;
  if (SkipSpace(&i)) return Fail(i, "content after the top-level object");
  if (failed_) return false;
  if (!saw_events) return Fail(i, "no traceEvents array");
  if (base_ns_ != 0) {
    for (auto& c : rank_.calls) c.start_ns += base_ns_, c.end_ns += base_ns_;
    for (auto& o : rank_.ops) o.start_ns += base_ns_, o.end_ns += base_ns_;
    for (auto& it : rank_.iterations) it.start_ns += base_ns_, it.end_ns += base_ns_;
    for (auto& c : rank_.counters)
      for (int64_t& t : c.t_ns) t += base_ns_;
  }
  rank_.events_read = event_index_;
  rank_.Finish();
  trace_->ranks.push_back(std::move(rank_));
  return true;
}

// The top-level values other than traceEvents, parsed from doc_.
bool Parser::TopLevelValue(std::string_view key) {
  if (key == "distributedInfo") {
    od::object di;
    if (doc_.get_object().get(di)) return true;  // null or odd: not distributed
    for (auto f : di) {
      std::string_view k;
      EMO_TRY(f.unescaped_key().get(k), "bad key in distributedInfo");
      od::value dv;
      EMO_TRY(f.value().get(dv), "bad value in distributedInfo");
      int64_t x;
      if (k == "rank" && ReadInt(dv, &x)) {
        rank_.rank = static_cast<int32_t>(x);
        rank_.rank_given = true;
      }
      if (k == "world_size" && ReadInt(dv, &x)) rank_.world_size = static_cast<int32_t>(x);
    }
  } else if (key == "deviceProperties") {
    od::array props;
    if (doc_.get_array().get(props)) return true;
    for (auto p : props) {
      od::object po;
      if (p.get_object().get(po)) continue;
      std::string_view name;
      if (rank_.gpu_name.empty() && !po.find_field_unordered("name").get_string().get(name))
        rank_.gpu_name = std::string(name);
    }
  } else if (key == "baseTimeNanoseconds") {
    std::string_view tok;
    if (doc_.raw_json_token().get(tok) || !ParseIntToken(tok, &base_ns_))
      return FailDoc(simdjson::INCORRECT_TYPE, "baseTimeNanoseconds is not an integer");
  } else if (key == "emoWindow") {  // written by emo trace --iterations (RankTrace::kernels_before)
    int64_t before = -1;
    od::value v;
    if (doc_.find_field_unordered("kernelsBefore").get(v) || !ReadInt(v, &before) || before < 0)
      return FailDoc(simdjson::INCORRECT_TYPE, "emoWindow.kernelsBefore is not a count");
    rank_.windowed = true;
    rank_.kernels_before = before;
  } else if (key == "host_name") {
    std::string_view h;
    if (!doc_.get_string().get(h)) rank_.clock_id = static_cast<int64_t>(std::hash<std::string_view>{}(h) >> 1);
  }
  return true;
}

// At buf_[*i] == '[': scans the events, parsing them a chunk at a time.
bool Parser::StreamEvents(size_t* i) {
  ++*i;
  size_t chunk = *i, last_end = *i;
  bool any = false;
  for (;;) {
    if (!SkipSpace(i)) return Truncated(*i, "in traceEvents");
    if (buf_[*i] == ']') {
      if (any) return Fail(*i, "trailing ',' in traceEvents");
      break;
    }
    if (!SkipValue(i)) return false;
    last_end = *i;
    any = true;
    if (!SkipSpace(i)) return Truncated(*i, "in traceEvents");
    if (buf_[*i] == ']') {
      any = false;
      break;
    }
    if (buf_[*i] != ',') return Fail(*i, "expected ',' or ']' after a trace event");
    ++*i;
    if (last_end - chunk >= kChunk) {
      if (!ParseDoc(chunk, last_end, true) || !ParseEventChunk()) return false;
      size_t keep = *i;
      Compact(&keep);
      chunk = last_end = *i = keep;
      any = true;  // a ',' was consumed: another event must follow
    } else {
      any = true;
    }
  }
  if (last_end > chunk && (!ParseDoc(chunk, last_end, true) || !ParseEventChunk())) return false;
  ++*i;  // past ']'
  return true;
}

bool Parser::ParseEventChunk() {
  od::array events;
  EMO_TRY(doc_.get_array().get(events), "bad traceEvents");
  for (auto item : events) {
    od::object ev;
    EMO_TRY(item.get_object().get(ev), "trace event #" + std::to_string(event_index_) + " is not an object");
    RawEvent e;
    if (!ParseEvent(ev, &e)) return false;
    if (!Store(e)) return false;
    ++event_index_;
  }
  return true;
}

bool Parser::ParseEvent(od::object ev, RawEvent* e) {
  for (auto field : ev) {
    od::raw_json_string rkey;
    EMO_TRY(field.key().get(rkey), "bad key in event #" + std::to_string(event_index_));
    od::value v;
    EMO_TRY(field.value().get(v), "bad value in event #" + std::to_string(event_index_));
    // Keys are compared unescaped against plain ASCII names.
    if (rkey == "ph") {
      EMO_TRY(v.get_string().get(e->ph), "event #" + std::to_string(event_index_) + ": ph is not a string");
    } else if (rkey == "cat") {
      EMO_TRY(v.get_string().get(e->cat), "event #" + std::to_string(event_index_) + ": cat is not a string");
    } else if (rkey == "name") {
      if (v.get_string().get(e->name)) e->name = {};
    } else if (rkey == "pid") {
      if (!ReadInt(v, &e->pid)) e->pid = -1;  // "Spans", "Traces": not a CUDA thread
    } else if (rkey == "tid") {
      if (!ReadInt(v, &e->tid)) e->tid = -1;
    } else if (rkey == "ts") {
      std::string_view tok = v.raw_json_token();
      if (!MicrosToNanos(tok, &e->ts_ns))
        return FailDoc(simdjson::NUMBER_ERROR, "event #" + std::to_string(event_index_) + ": ts is not a number");
      e->has_ts = true;
    } else if (rkey == "dur") {
      std::string_view tok = v.raw_json_token();
      if (!MicrosToNanos(tok, &e->dur_ns))
        return FailDoc(simdjson::NUMBER_ERROR, "event #" + std::to_string(event_index_) + ": dur is not a number");
    } else if (rkey == "args") {
      od::object args;
      if (v.get_object().get(args)) continue;
      if (!ParseArgs(args, e)) return false;
    }
  }
  return true;
}

bool Parser::ParseArgs(od::object args, RawEvent* e) {
  const bool counter = e->ph == "C";
  for (auto field : args) {
    if (counter) {  // a series per arg: the first one that is a number is kept
      std::string_view key;
      double value = 0;
      if (e->counter_key.empty() && !field.unescaped_key().get(key) && !field.value().get_double().get(value) &&
          !key.empty()) {
        e->counter_key = key;
        e->counter_value = value;
      }
      continue;
    }
    od::raw_json_string rkey;
    EMO_TRY(field.key().get(rkey), "bad args key in event #" + std::to_string(event_index_));
    od::value v;
    EMO_TRY(field.value().get(v), "bad args value in event #" + std::to_string(event_index_));
    int64_t* target = nullptr;
    std::string_view* text = nullptr;
    if (rkey == "correlation")
      target = &e->correlation;
    else if (rkey == "stream")
      target = &e->stream;
    else if (rkey == "device")
      target = &e->device;
    else if (rkey == "bytes")
      target = &e->bytes;
    else if (rkey == "wait_on_stream")
      target = &e->wait_on_stream;
    else if (rkey == "wait_on_cuda_event_record_corr_id")
      target = &e->record_corr;
    else if (rkey == "wait_on_cuda_event_id")
      target = &e->event_id;
    else if (rkey == "In msg nelems")
      target = &e->in_nelems;
    else if (rkey == "cuda_sync_kind")
      text = &e->sync_kind;
    else if (rkey == "Process Group Name")
      text = &e->process_group;
    else if (rkey == "dtype")
      text = &e->dtype;
    if (target && !ReadInt(v, target)) *target = -1;
    if (text && v.get_string().get(*text)) *text = {};
  }
  return true;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool Parser::Store(const RawEvent& e) {
  if (e.ph == "C") {  // a counter sample: appended to its (device, name, unit) track
    if (!e.has_ts || e.counter_key.empty()) return true;
    const auto device = static_cast<int32_t>(e.pid);
    auto it = std::find_if(rank_.counters.begin(), rank_.counters.end(), [&](const CounterTrack& c) {
      return c.device == device && c.name == e.name && c.unit == e.counter_key;
    });
    if (it == rank_.counters.end()) {
      rank_.counters.push_back({device, std::string(e.name), std::string(e.counter_key), {}, {}});
      it = rank_.counters.end() - 1;
    }
    it->t_ns.push_back(e.ts_ns);
    it->value.push_back(e.counter_value);
    return true;
  }
  if (e.ph != "X") {
    return true;  // flows, instants, metadata: not needed for the graph
  }
  if (!e.has_ts) return FailDoc(simdjson::NO_SUCH_FIELD, "event #" + std::to_string(event_index_) + " has no ts");
  int64_t dur = e.dur_ns < 0 ? 0 : e.dur_ns;  // Kineto writes -1 for unfinished events
  // The older PyTorch profiler dialect (PyTorch <= 1.9) names the same records Runtime, Kernel,
  // Memcpy and Memset (its flows, async_gpu, are not needed: correlation ids are in args).
  std::string_view cat = e.cat;
  if (cat == "Runtime")
    cat = "cuda_runtime";
  else if (cat == "Kernel")
    cat = "kernel";
  else if (cat == "Memcpy")
    cat = "gpu_memcpy";
  else if (cat == "Memset")
    cat = "gpu_memset";
  if (cat == "cuda_runtime" || cat == "cuda_driver") {
    CpuCall c;
    c.start_ns = e.ts_ns;
    c.end_ns = e.ts_ns + dur;
    c.correlation = e.correlation;
    c.thread = rank_.ThreadIndex(e.pid, e.tid);
    c.name = trace_->names.Intern(e.name);
    c.kind = ClassifyCall(e.name);
    rank_.calls.push_back(c);
  } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
    GpuOp o;
    o.start_ns = e.ts_ns;
    o.end_ns = e.ts_ns + dur;
    o.correlation = e.correlation;
    o.stream = e.stream >= 0 ? e.stream : e.tid;
    o.device = static_cast<int32_t>(e.device >= 0 ? e.device : e.pid);
    o.name = trace_->names.Intern(e.name);
    o.kind = cat == "kernel" ? GpuOpKind::kKernel : cat == "gpu_memcpy" ? GpuOpKind::kMemcpy : GpuOpKind::kMemset;
    o.is_comm = o.kind == GpuOpKind::kKernel &&
                (StartsWith(e.name, "nccl") || StartsWith(e.name, "rccl") || StartsWith(e.name, "void nccl"));
    if (!e.process_group.empty()) o.process_group = trace_->names.Intern(e.process_group);
    o.bytes = e.bytes;
    if (o.bytes < 0 && e.in_nelems >= 0) {
      int64_t b = DtypeBytes(e.dtype);
      if (b > 0) o.bytes = e.in_nelems * b;
    }
    rank_.ops.push_back(o);
  } else if (cat == "cuda_sync") {
    SyncRecord s;
    std::string_view k = e.sync_kind.empty() ? e.name : e.sync_kind;
    if (k == "Stream Sync")
      s.kind = SyncKind::kStreamSync;
    else if (k == "Event Sync")
      s.kind = SyncKind::kEventSync;
    else if (k == "Context Sync")
      s.kind = SyncKind::kContextSync;
    else if (k == "Stream Wait Event")
      s.kind = SyncKind::kStreamWaitEvent;
    else
      return true;  // a kind this version does not know: it adds no edge
    s.correlation = e.correlation;
    s.stream = e.stream == 4294967295LL ? -1 : e.stream;
    s.wait_on_stream = e.wait_on_stream;
    s.record_correlation = e.record_corr;
    s.event_id = e.event_id;
    rank_.syncs.push_back(s);
  } else if ((cat == "user_annotation" || cat == "cpu_op") && StartsWith(e.name, "ProfilerStep#")) {
    Iteration it;
    it.start_ns = e.ts_ns;
    it.end_ns = e.ts_ns + dur;
    std::string_view n = e.name.substr(13);
    if (std::from_chars(n.data(), n.data() + n.size(), it.step).ec != std::errc()) it.step = -1;
    // PyTorch writes each step twice (cpu_op and user_annotation): keep one.
    for (const auto& old : rank_.iterations)
      if (old.start_ns == it.start_ns && old.step == it.step) return true;
    rank_.iterations.push_back(it);
  } else if (cat == "cpu_op" && StartsWith(e.name, "autograd::engine::evaluate_function")) {
    ThreadId t{e.pid, e.tid};
    auto it = std::find_if(rank_.autograd_threads.begin(), rank_.autograd_threads.end(),
                           [&](const auto& a) { return a.first == t; });
    if (it == rank_.autograd_threads.end())
      rank_.autograd_threads.push_back({t, 1});
    else
      ++it->second;
  }
  return true;
}

}  // namespace

bool ParseKinetoJson(std::string_view source, const char* data, size_t size, Trace* trace, std::string* err) {
  ByteStream in(data, size);
  Parser p(source, &in, trace, err);
  return p.Run();
}

bool LoadKinetoJson(const std::string& path, Trace* trace, std::string* err,
                    const std::function<void(uint64_t)>& progress) {
  ByteStream in;
  if (!in.Open(path, err)) return false;
  Parser p(path, &in, trace, err, progress);
  return p.Run();
}

}  // namespace emo
