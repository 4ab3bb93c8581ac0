// nsys_sqlite.cc — reads an Nsight Systems SQLite export into a Trace: one RankTrace per process,
// with its CUDA API calls, kernels/copies/memsets, synchronisation records and ProfilerStep ranges.
#include "trace/nsys_sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace emo {
namespace {

constexpr int64_t kCuptiInvalid = 0xFFFFFFFFLL;  // CUPTI's "not applicable" stream/event id

// Serialized GlobalId: (hwId << 56) | (vmId << 48) | ... | (pid << 24) | tid.
int64_t PidOf(int64_t global_id) { return static_cast<int64_t>((static_cast<uint64_t>(global_id) >> 24) & 0xFFFFFF); }
int64_t TidOf(int64_t global_id) { return static_cast<int64_t>(static_cast<uint64_t>(global_id) & 0xFFFFFF); }

bool IsNull(sqlite3_stmt* s, int col) { return sqlite3_column_type(s, col) == SQLITE_NULL; }
int64_t Int(sqlite3_stmt* s, int col, int64_t null_value) {
  return IsNull(s, col) ? null_value : sqlite3_column_int64(s, col);
}
// An id column: -1 for NULL, negative values and CUPTI's 0xFFFFFFFF.
int64_t Id(sqlite3_stmt* s, int col) {
  int64_t v = Int(s, col, -1);
  return (v < 0 || v == kCuptiInvalid) ? -1 : v;
}
std::string_view Text(sqlite3_stmt* s, int col) {
  const unsigned char* p = sqlite3_column_text(s, col);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s, col))};
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// "CUDA_MEMCPY_KIND_UVM_HTOD" -> "Memcpy UVM HtoD"; unknown kinds -> "Memcpy".
std::string MemcpyName(std::string_view kind) {
  constexpr std::string_view kPrefix = "CUDA_MEMCPY_KIND_";
  if (StartsWith(kind, kPrefix)) kind.remove_prefix(kPrefix.size());
  std::string out = "Memcpy";
  if (kind.empty() || kind == "UNKNOWN") return out;
  while (!kind.empty()) {
    size_t cut = std::min(kind.find('_'), kind.size());
    std::string_view tok = kind.substr(0, cut);
    kind.remove_prefix(std::min(cut + 1, kind.size()));
    out += ' ';
    if (tok.size() == 4 && tok.substr(1, 2) == "TO") {
      out += tok[0];
      out += "to";
      out += tok[3];
    } else {
      out += tok;
    }
  }
  return out;
}

// Parses "ProfilerStep#N..." into N; -1 when the text is not a step marker.
int64_t ProfilerStep(std::string_view text) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (!StartsWith(text, kPrefix)) return -1;
  text.remove_prefix(kPrefix.size());
  int64_t step = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
  return (ec == std::errc() && end != text.data() && step >= 0) ? step : -1;
}

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;
struct DbDeleter {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Columns = std::unordered_set<std::string>;

// A cudaEventRecord as CUPTI_ACTIVITY_KIND_CUDA_EVENT describes it.
struct EventRecord {
  int64_t correlation = -1;
  int64_t stream = -1;
};

struct Process {
  RankTrace rank;
  std::unordered_map<int64_t, CallKind> sync_calls;                   // correlation -> kind, synchronising calls only
  std::unordered_map<int64_t, EventRecord> by_sync_id;                // CUDA_EVENT eventSyncId -> record
  std::unordered_map<int64_t, std::vector<EventRecord>> by_event_id;  // eventId -> records by correlation
};

class Loader {
 public:
  Loader(const std::string& path, Trace* trace, std::string* err) : path_(path), trace_(trace), err_(err) {}

  bool Run() {
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) return Fail(std::string("cannot open: ") + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    if (!ReadTableList()) return false;
    std::vector<std::string> missing;
    for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "StringIds"})
      if (!tables_.count(t)) missing.push_back(t);
    if (!missing.empty()) {
      std::string what = missing.size() == 1 ? "table " : "tables ";
      for (size_t i = 0; i < missing.size(); ++i) what += (i ? ", " : "") + missing[i];
      return Fail("not an Nsight Systems export: " + what + " missing");
    }
    if (!Prepare("StringIds", "SELECT value FROM StringIds WHERE id = ?", &string_stmt_)) return false;
    if (!ReadRuntime() || !ReadOps("CUPTI_ACTIVITY_KIND_KERNEL", GpuOpKind::kKernel) ||
        !ReadOps("CUPTI_ACTIVITY_KIND_MEMCPY", GpuOpKind::kMemcpy) ||
        !ReadOps("CUPTI_ACTIVITY_KIND_MEMSET", GpuOpKind::kMemset) || !ReadCudaEvents() || !ReadSyncs() ||
        !ReadIterations())
      return false;
    return Emit();
  }

 private:
  bool Fail(const std::string& what) {
    *err_ = path_ + ": " + what;
    std::replace_if(
        err_->begin(), err_->end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
    return false;
  }
  bool SqlFail(std::string_view where) {
    sqlite3* db = db_.get();
    if (sqlite3_errcode(db) == SQLITE_NOTADB) return Fail(std::string("not an SQLite database: ") + sqlite3_errmsg(db));
    return Fail(std::string(where) + ": " + sqlite3_errmsg(db));
  }
  bool Prepare(std::string_view where, const std::string& sql, Stmt* out) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &s, nullptr);
    out->reset(s);
    return rc == SQLITE_OK ? true : SqlFail(where);
  }
  // Runs `fn` on each row of `sql`; fails on any SQLite error.
  template <typename Fn>
  bool ForEachRow(const std::string& table, const std::string& sql, Fn fn) {
    Stmt s;
    if (!Prepare(table, sql, &s)) return false;
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) fn(s.get());
    return rc == SQLITE_DONE ? true : SqlFail(table);
  }

  bool ReadTableList() {
    return ForEachRow("sqlite_master", "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
                      [&](sqlite3_stmt* s) { tables_.emplace(Text(s, 0)); });
  }
  bool ReadColumns(const std::string& table, Columns* cols) {
    return ForEachRow(table, "PRAGMA table_info(\"" + table + "\")",
                      [&](sqlite3_stmt* s) { cols->emplace(Text(s, 1)); });
  }
  bool Require(const std::string& table, const Columns& cols, std::initializer_list<const char*> need) {
    for (const char* c : need)
      if (!cols.count(c)) return Fail("not an Nsight Systems export: column " + table + "." + c + " missing");
    return true;
  }
  // A select-list entry: the quoted column, or NULL where the table lacks it.
  static std::string Col(const Columns& cols, const char* c) {
    if (!cols.count(c)) return "NULL";
    std::string quoted = "\"";  // (not "\"" + s + "\"": GCC 12 -O3 warns falsely on it, -Wrestrict)
    quoted += c;
    quoted += '"';
    return quoted;
  }
  // id -> enum `name` (e.g. CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE); empty if absent.
  bool ReadEnum(const std::string& table, std::unordered_map<int64_t, std::string>* out) {
    if (!tables_.count(table)) return true;
    Columns cols;
    if (!ReadColumns(table, &cols)) return false;
    if (!cols.count("id") || !cols.count("name")) return true;
    return ForEachRow(table, "SELECT id, name FROM \"" + table + "\"", [&](sqlite3_stmt* s) {
      if (!IsNull(s, 0)) (*out)[sqlite3_column_int64(s, 0)] = std::string(Text(s, 1));
    });
  }

  // Interned name of a StringIds row; the empty string (id 0) for NULL or a missing row.
  uint32_t Name(sqlite3_stmt* s, int col) {
    if (IsNull(s, col)) return 0;
    int64_t id = sqlite3_column_int64(s, col);
    auto it = names_.find(id);
    if (it != names_.end()) return it->second;
    uint32_t name = 0;
    sqlite3_stmt* q = string_stmt_.get();
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) name = trace_->names.Intern(Text(q, 0));
    sqlite3_reset(q);
    names_.emplace(id, name);
    return name;
  }

  Process& Proc(int64_t pid) {
    if (last_ != nullptr && last_pid_ == pid) return *last_;
    last_pid_ = pid;
    last_ = &procs_[pid];
    return *last_;
  }
  Process& ProcOfGlobalId(sqlite3_stmt* s, int col) { return Proc(PidOf(Int(s, col, 0))); }

  bool ReadRuntime() {
    const std::string t = "CUPTI_ACTIVITY_KIND_RUNTIME";
    Columns cols;
    if (!ReadColumns(t, &cols) || !Require(t, cols, {"start", "end", "globalTid", "correlationId", "nameId"}))
      return false;
    return ForEachRow(t, "SELECT start, \"end\", globalTid, correlationId, nameId FROM " + t, [&](sqlite3_stmt* s) {
      int64_t gtid = Int(s, 2, 0);
      Process& p = Proc(PidOf(gtid));
      CpuCall c;
      c.start_ns = Int(s, 0, 0);
      c.end_ns = std::max(c.start_ns, Int(s, 1, c.start_ns));
      c.correlation = Id(s, 3);
      c.thread = p.rank.ThreadIndex(PidOf(gtid), TidOf(gtid));
      c.name = Name(s, 4);
      c.kind = ClassifyCall(trace_->names.Get(c.name));
      if (c.correlation >= 0 && (c.kind == CallKind::kStreamSync || c.kind == CallKind::kEventSync ||
                                 c.kind == CallKind::kDeviceSync || c.kind == CallKind::kStreamWaitEvent))
        p.sync_calls[c.correlation] = c.kind;
      p.rank.calls.push_back(c);
      ++p.rank.events_read;
    });
  }

  bool ReadOps(const std::string& t, GpuOpKind kind) {
    if (!tables_.count(t)) return true;  // only KERNEL is required, and Run() checked it
    Columns cols;
    if (!ReadColumns(t, &cols) ||
        !Require(t, cols, {"start", "end", "globalPid", "correlationId", "streamId", "deviceId"}))
      return false;
    std::string extra;  // columns 6 and 7
    if (kind == GpuOpKind::kKernel) {
      if (!cols.count("demangledName") && !cols.count("shortName"))
        return Fail("not an Nsight Systems export: column " + t + ".demangledName missing");
      extra = Col(cols, "demangledName") + ", " + Col(cols, "shortName");
    } else {
      extra = Col(cols, "bytes") + ", " + (kind == GpuOpKind::kMemcpy ? Col(cols, "copyKind") : "NULL") + ", " +
              (kind == GpuOpKind::kMemcpy ? Col(cols, "srcKind") + ", " + Col(cols, "dstKind") : "NULL, NULL");
    }
    std::unordered_map<int64_t, std::string> copy_kinds, mem_kinds;
    if (kind == GpuOpKind::kMemcpy &&
        (!ReadEnum("ENUM_CUDA_MEMCPY_OPER", &copy_kinds) || !ReadEnum("ENUM_CUDA_MEM_KIND", &mem_kinds)))
      return false;
    // "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE" -> "Pageable"; "" when unknown.
    auto mem_kind = [&](int64_t id) -> std::string {
      auto e = mem_kinds.find(id);
      if (e == mem_kinds.end()) return "";
      std::string_view k = e->second;
      k.remove_prefix(std::min(k.size(), k.rfind('_') + 1));
      if (k.empty() || k == "UNKNOWN") return "";
      std::string out(k.substr(0, 1));
      for (char c : k.substr(1)) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return out;
    };
    // (copyKind, srcKind, dstKind) -> interned name in Kineto's style: "Memcpy HtoD (Pageable -> Device)".
    std::map<std::tuple<int64_t, int64_t, int64_t>, uint32_t> copy_names;
    const uint32_t memset_name = kind == GpuOpKind::kMemset ? trace_->names.Intern("Memset") : 0;
    const std::string sql =
        "SELECT start, \"end\", globalPid, correlationId, streamId, deviceId, " + extra + " FROM " + t;
    return ForEachRow(t, sql, [&](sqlite3_stmt* s) {
      Process& p = ProcOfGlobalId(s, 2);
      GpuOp op;
      op.kind = kind;
      op.start_ns = Int(s, 0, 0);
      op.end_ns = std::max(op.start_ns, Int(s, 1, op.start_ns));
      op.correlation = Id(s, 3);
      op.stream = Int(s, 4, 0);
      op.device = static_cast<int32_t>(std::clamp<int64_t>(Int(s, 5, 0), -1, INT32_MAX));
      if (kind == GpuOpKind::kKernel) {
        op.name = Name(s, 6);
        if (op.name == 0) op.name = Name(s, 7);
        std::string_view n = trace_->names.Get(op.name);
        op.is_comm = StartsWith(n, "nccl") || Contains(n, "ncclKernel") || Contains(n, "ncclDevKernel");
      } else {
        op.bytes = Int(s, 6, -1);
        if (kind == GpuOpKind::kMemset) {
          op.name = memset_name;
        } else {
          auto key = std::make_tuple(Int(s, 7, 0), Int(s, 8, -1), Int(s, 9, -1));
          auto it = copy_names.find(key);
          if (it == copy_names.end()) {
            auto e = copy_kinds.find(std::get<0>(key));
            std::string name = MemcpyName(e == copy_kinds.end() ? "" : e->second);
            std::string src = mem_kind(std::get<1>(key)), dst = mem_kind(std::get<2>(key));
            if (!src.empty() && !dst.empty()) name += " (" + src + " -> " + dst + ")";
            it = copy_names.emplace(key, trace_->names.Intern(name)).first;
          }
          op.name = it->second;
        }
      }
      p.rank.ops.push_back(op);
      ++p.rank.events_read;
    });
  }

  // CUPTI_ACTIVITY_KIND_CUDA_EVENT (optional): one row per cudaEventRecord, used to resolve what a
  // cudaStreamWaitEvent / cudaEventSynchronize waited on.
  bool ReadCudaEvents() {
    const std::string t = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";
    if (!tables_.count(t)) return true;
    Columns cols;
    if (!ReadColumns(t, &cols)) return false;
    if (!cols.count("globalPid") || !cols.count("correlationId") || !cols.count("streamId")) return true;
    const std::string sql = "SELECT globalPid, correlationId, streamId, " + Col(cols, "eventId") + ", " +
                            Col(cols, "eventSyncId") + " FROM " + t;
    bool ok = ForEachRow(t, sql, [&](sqlite3_stmt* s) {
      Process& p = ProcOfGlobalId(s, 0);
      EventRecord r{Id(s, 1), Id(s, 2)};
      ++p.rank.events_read;
      if (r.correlation < 0) return;
      if (int64_t sync_id = Id(s, 4); sync_id >= 0) p.by_sync_id[sync_id] = r;
      if (int64_t event_id = Id(s, 3); event_id >= 0) p.by_event_id[event_id].push_back(r);
    });
    for (auto& [pid, p] : procs_)
      for (auto& [event_id, recs] : p.by_event_id)
        std::sort(recs.begin(), recs.end(),
                  [](const EventRecord& a, const EventRecord& b) { return a.correlation < b.correlation; });
    return ok;
  }

  bool ReadSyncs() {
    const std::string t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    if (!tables_.count(t)) return true;
    Columns cols;
    if (!ReadColumns(t, &cols) || !Require(t, cols, {"globalPid", "correlationId", "streamId", "syncType"}))
      return false;
    // syncType -> kind, by the enum's names; CUPTI's numbering where the enum table is absent.
    std::unordered_map<int64_t, std::string> enum_names;
    if (!ReadEnum("ENUM_CUPTI_SYNC_TYPE", &enum_names)) return false;
    std::unordered_map<int64_t, SyncKind> type_kind;
    if (enum_names.empty()) {
      type_kind = {{1, SyncKind::kEventSync},
                   {2, SyncKind::kStreamWaitEvent},
                   {3, SyncKind::kStreamSync},
                   {4, SyncKind::kContextSync}};
    }
    for (const auto& [id, name] : enum_names) {
      if (Contains(name, "EVENT_SYNCHRONIZE"))
        type_kind[id] = SyncKind::kEventSync;
      else if (Contains(name, "STREAM_WAIT_EVENT"))
        type_kind[id] = SyncKind::kStreamWaitEvent;
      else if (Contains(name, "STREAM_SYNCHRONIZE"))
        type_kind[id] = SyncKind::kStreamSync;
      else if (Contains(name, "CONTEXT_SYNCHRONIZE"))
        type_kind[id] = SyncKind::kContextSync;
    }
    const std::string sql = "SELECT globalPid, correlationId, streamId, syncType, " + Col(cols, "eventId") + ", " +
                            Col(cols, "eventSyncId") + " FROM " + t;
    return ForEachRow(t, sql, [&](sqlite3_stmt* s) {
      Process& p = ProcOfGlobalId(s, 0);
      ++p.rank.events_read;
      SyncRecord r;
      r.correlation = Id(s, 1);
      r.stream = Id(s, 2);
      r.event_id = Id(s, 4);
      // The API call's name decides the kind where it is a synchronising call: nsys 2024.6 and 2025.1
      // export cudaStreamSynchronize with syncType 2, which ENUM_CUPTI_SYNC_TYPE labels STREAM_WAIT_EVENT.
      auto call = r.correlation >= 0 ? p.sync_calls.find(r.correlation) : p.sync_calls.end();
      if (call != p.sync_calls.end()) {
        switch (call->second) {
          case CallKind::kStreamSync:
            r.kind = SyncKind::kStreamSync;
            break;
          case CallKind::kEventSync:
            r.kind = SyncKind::kEventSync;
            break;
          case CallKind::kDeviceSync:
            r.kind = SyncKind::kContextSync;
            break;
          default:
            r.kind = SyncKind::kStreamWaitEvent;
            break;  // kStreamWaitEvent, the only other kind kept
        }
      } else {
        auto k = type_kind.find(Int(s, 3, 0));
        if (k == type_kind.end()) return;  // unknown synchronisation type
        r.kind = k->second;
      }
      if (r.kind == SyncKind::kStreamWaitEvent || r.kind == SyncKind::kEventSync) {
        // eventSyncId (schema 3.17+) names the awaited record exactly; otherwise the latest record of
        // the same event issued before this call (correlation ids grow with API entry order).
        const EventRecord* rec = nullptr;
        if (int64_t sync_id = Id(s, 5); sync_id >= 0) {
          auto it = p.by_sync_id.find(sync_id);
          if (it != p.by_sync_id.end()) rec = &it->second;
        }
        if (rec == nullptr && r.event_id >= 0 && r.correlation >= 0) {
          auto it = p.by_event_id.find(r.event_id);
          if (it != p.by_event_id.end()) {
            auto after = std::lower_bound(it->second.begin(), it->second.end(), r.correlation,
                                          [](const EventRecord& e, int64_t corr) { return e.correlation < corr; });
            if (after != it->second.begin()) rec = &*(after - 1);
          }
        }
        if (rec != nullptr) {
          r.record_correlation = rec->correlation;
          r.wait_on_stream = rec->stream;
        }
      }
      p.rank.syncs.push_back(r);
    });
  }

  // NVTX ranges named "ProfilerStep#N" (text, or a registered string via textId).
  bool ReadIterations() {
    const std::string t = "NVTX_EVENTS";
    if (!tables_.count(t)) return true;
    Columns cols;
    if (!ReadColumns(t, &cols) || !Require(t, cols, {"start", "end", "globalTid"})) return false;
    const bool has_text = cols.count("text") > 0, has_id = cols.count("textId") > 0;
    if (!has_text && !has_id) return true;
    const std::string text = has_text && has_id ? "COALESCE(n.text, s.value)" : has_text ? "n.text" : "s.value";
    const std::string sql = "SELECT n.start, n.\"end\", n.globalTid, " + text + " FROM NVTX_EVENTS n" +
                            (has_id ? " LEFT JOIN StringIds s ON s.id = n.textId" : "") +
                            " WHERE n.\"end\" IS NOT NULL AND " + text + " LIKE 'ProfilerStep#%'";
    return ForEachRow(t, sql, [&](sqlite3_stmt* s) {
      Process& p = ProcOfGlobalId(s, 2);
      ++p.rank.events_read;
      int64_t step = ProfilerStep(Text(s, 3));
      if (step < 0) return;
      Iteration it;
      it.start_ns = Int(s, 0, 0);
      it.end_ns = std::max(it.start_ns, Int(s, 1, it.start_ns));
      it.step = step;
      p.rank.iterations.push_back(it);
    });
  }

  // GPU names: TARGET_INFO_GPU (id -> name) and, where present, TARGET_INFO_CUDA_DEVICE, which maps a
  // process's CUDA device ordinal (the deviceId of its ops) to that GPU id.
  bool ReadGpuNames(std::map<int64_t, std::string>* gpus, std::map<std::pair<int64_t, int64_t>, int64_t>* cuda) {
    Columns cols;
    if (tables_.count("TARGET_INFO_GPU")) {
      if (!ReadColumns("TARGET_INFO_GPU", &cols)) return false;
      if (cols.count("id") && cols.count("name") &&
          !ForEachRow("TARGET_INFO_GPU", "SELECT id, name FROM TARGET_INFO_GPU", [&](sqlite3_stmt* s) {
            if (!IsNull(s, 0) && !IsNull(s, 1)) gpus->emplace(sqlite3_column_int64(s, 0), Text(s, 1));
          }))
        return false;
    }
    cols.clear();
    if (tables_.count("TARGET_INFO_CUDA_DEVICE")) {
      if (!ReadColumns("TARGET_INFO_CUDA_DEVICE", &cols)) return false;
      if (cols.count("gpuId") && cols.count("cudaId") && cols.count("pid") &&
          !ForEachRow("TARGET_INFO_CUDA_DEVICE", "SELECT pid, cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE",
                      [&](sqlite3_stmt* s) {
                        if (!IsNull(s, 2)) cuda->emplace(std::pair(Int(s, 0, -1), Int(s, 1, -1)), Int(s, 2, -1));
                      }))
        return false;
    }
    return true;
  }

  bool Emit() {
    std::map<int64_t, std::string> gpus;
    std::map<std::pair<int64_t, int64_t>, int64_t> cuda;
    if (!ReadGpuNames(&gpus, &cuda)) return false;
    // A rank is a process that ran GPU work; processes that only made API calls (a launcher
    // querying devices) add nothing to the graph.
    std::vector<std::pair<int64_t, RankTrace*>> kept;  // std::map iterates in pid order
    for (auto& [pid, p] : procs_)
      if (!p.rank.ops.empty()) kept.emplace_back(pid, &p.rank);
    for (size_t i = 0; i < kept.size(); ++i) {
      auto [pid, r] = kept[i];
      r->source = path_;
      r->rank = static_cast<int32_t>(i);
      r->rank_given = true;
      r->world_size = static_cast<int32_t>(kept.size());
      r->clock_id = 0;  // one export: all processes share the host clock
      int64_t cuda_id = r->ops.empty() ? 0 : r->ops.front().device;
      auto c = cuda.find({pid, cuda_id});
      auto g = gpus.find(c != cuda.end() ? c->second : cuda_id);
      if (g == gpus.end() && gpus.size() == 1) g = gpus.begin();
      if (g != gpus.end()) r->gpu_name = g->second;
      r->Finish();
      trace_->ranks.push_back(std::move(*r));
    }
    return true;
  }

  std::string path_;
  Trace* trace_;
  std::string* err_;
  std::unique_ptr<sqlite3, DbDeleter> db_;
  Stmt string_stmt_;
  std::unordered_set<std::string> tables_;
  std::unordered_map<int64_t, uint32_t> names_;  // StringIds id -> interned id
  std::map<int64_t, Process> procs_;             // by pid
  Process* last_ = nullptr;                      // cache for runs of rows of one process
  int64_t last_pid_ = -1;
};

}  // namespace

bool LoadNsysSqlite(const std::string& path, Trace* trace, std::string* err) {
  Loader loader(path, trace, err);
  return loader.Run();
}

}  // namespace emo
