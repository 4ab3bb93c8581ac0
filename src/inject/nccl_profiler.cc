// nccl_profiler.cc — libemo_nccl_profiler.so, EMO's NCCL profiler plugin (NCCL_PROFILER_PLUGIN,
// API v5: inject/nccl_profiler_v5.h). It records every collective (with its communicator and
// sequence number), every send/recv and every kernel launch of the process, with the API events
// that tie them together, and appends them as text lines (trace/nccl_records.h) to
// $EMO_TRACE_DIR/emo-nccl-rank<R>.txt (emo-nccl-pid<P>.txt without a launcher rank), the file
// name `emo trace`'s injection library uses for the same process's trace, with ".txt".
//
// Under `emo trace --warmup M --iterations N` or `--on-demand`, an event is recorded only when the
// process's injection library (libemo_inject.so, found through CUDA_INJECTION64_PATH) says at its
// start that it belongs to the trace (EmoTraceRecording: during the window's steps), so that a long
// job's file stays the size of its window and its launches line up with the window's NCCL kernels;
// without that library, every event is.
//
// Cost: only CPU-side events are activated (no proxy, network or kernel-channel events); each
// event takes a slot of a fixed ring and is written to a 1 MiB buffer when it stops, which is
// appended to the file when full and at each communicator's finalize. Nothing here may stop the
// user's job: every call returns success, and a write error prints one line naming the file and
// ends recording for the process.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "inject/nccl_profiler_v5.h"
#include "trace/launcher_rank.h"

namespace {

namespace v5 = emo::nccl_v5;

constexpr int kMask = v5::kGroupApi | v5::kCollApi | v5::kP2pApi | v5::kKernelLaunch | v5::kColl | v5::kP2p;
constexpr size_t kSlots = 4096;           // live events at most; a freed slot is reused kSlots events later
constexpr size_t kBufferBytes = 1 << 20;  // appended to the file when full

// One communicator, as NCCL's init described it.
struct Context {
  uint64_t comm = 0;  // NCCL's commHash: the same on every rank of the communicator
  int rank = 0, nranks = 0;
};

// One started event. `handle` identity: its address, which NCCL hands back (and passes as a
// child's parentObj). A slot keeps its id and group after it stops, so that a child starting after
// its parent stopped (a collective task after its API call) still finds the group.
struct Slot {
  uint64_t id = 0;        // 1, 2, ... in start order across the process; 0: never used
  uint64_t group = 0;     // id of the GroupApi event it belongs to; 0 none
  bool captured = false;  // inside a CUDA graph capture (its group's or API call's graphCaptured)
  uint64_t type = 0;
  bool live = false;
  const Context* ctx = nullptr;
  int64_t start_ns = 0;
  long tid = 0;
  uint64_t seq = 0;
  size_t count = 0;
  int peer_or_root = -1;
  void* stream = nullptr;
  uint8_t channels = 0;
  char func[24] = {}, dtype[24] = {}, algo[16] = {}, proto[16] = {};
};

struct State {
  std::mutex mu;
  Slot slots[kSlots];
  size_t cursor = 0;
  uint64_t next_id = 1;
  std::map<std::tuple<uint64_t, std::string, int>, uint64_t> p2p_seq;  // (comm, func, peer) -> next
  std::string buffer;
  std::string path;
  bool opened = false;  // the file was created in this process (later flushes append)
  bool failed = false;  // a write failed: recording stopped
};

State* g_state = nullptr;

// The injection library's EmoTraceRecording, looked up once (at the first event: NCCL starts
// after CUDA, which loads that library first); null where there is none, and then every event is
// recorded.
using RecordingFn = int (*)();
RecordingFn TraceGate() {
  static const RecordingFn gate = []() -> RecordingFn {
    const char* path = std::getenv("CUDA_INJECTION64_PATH");
    void* lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return lib ? reinterpret_cast<RecordingFn>(dlsym(lib, "EmoTraceRecording")) : nullptr;
  }();
  return gate;
}

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// NCCL's strings (function, datatype, algorithm names) as one word: spaces would split a line.
void CopyWord(char* dst, size_t size, const char* src) {
  size_t n = 0;
  if (src)
    for (; src[n] && n + 1 < size; ++n) dst[n] = src[n] == ' ' || src[n] == '\t' || src[n] == '\n' ? '_' : src[n];
  if (n == 0 && size > 1) dst[n++] = '-';
  dst[n] = '\0';
}

// Appends the buffer to the file (created at the first flush). Called with the lock held.
void Flush(State* s) {
  if (s->failed || s->buffer.empty()) return;
  if (s->path.empty()) {
    const char* dir = std::getenv("EMO_TRACE_DIR");
    const emo::LauncherRank r = emo::RankFromEnvironment([](const char* v) { return std::getenv(v); });
    s->path = std::string(dir && *dir ? dir : ".") + "/" + emo::NcclFileName(r, static_cast<long>(getpid()));
  }
  FILE* f = std::fopen(s->path.c_str(), s->opened ? "a" : "w");
  int error = f ? 0 : errno;  // the first failure's errno
  if (!error && !s->opened && std::fputs("# emo-nccl-profiler 1\n", f) < 0) error = errno ? errno : EIO;
  if (!error && std::fwrite(s->buffer.data(), 1, s->buffer.size(), f) != s->buffer.size()) error = errno ? errno : EIO;
  if (f && std::fclose(f) != 0 && !error) error = errno ? errno : EIO;
  if (error) {
    std::fprintf(stderr, "emo nccl profiler: %s: cannot write: %s; recording stops\n", s->path.c_str(),
                 std::strerror(error));
    s->failed = true;
  }
  s->opened = true;
  s->buffer.clear();
}

void Append(State* s, const char* line, int n) {
  if (n <= 0) return;
  s->buffer.append(line, static_cast<size_t>(n));
  if (s->buffer.size() + 512 > kBufferBytes) Flush(s);
}

// Writes the record of a stopped (end_ns >= 0) or never stopped (-1) event.
void Write(State* s, const Slot& e, int64_t end_ns) {
  const char* kind = e.type == v5::kColl ? "coll" : e.type == v5::kP2p ? "p2p" : "launch";
  if (!(e.type & (v5::kColl | v5::kP2p | v5::kKernelLaunch))) return;  // API events only group their children
  char line[512];
  const int head =
      std::snprintf(line, sizeof line, "%s %" PRIu64 " %016" PRIx64 " %d %" PRIu64 " %ld %" PRId64 " %" PRId64, kind,
                    e.id, e.ctx->comm, e.ctx->rank, e.group, e.tid, e.start_ns, end_ns);
  if (head <= 0 || static_cast<size_t>(head) >= sizeof line) return;
  const size_t room = sizeof line - static_cast<size_t>(head);
  int n = 0;
  if (e.type == v5::kColl)
    n = std::snprintf(line + head, room, " %" PRIu64 " %s %zu %s %d %s %s %u\n", e.seq, e.func, e.count, e.dtype,
                      e.peer_or_root, e.algo, e.proto, static_cast<unsigned>(e.channels));
  else if (e.type == v5::kP2p)
    n = std::snprintf(line + head, room, " %" PRIu64 " %s %zu %s %d\n", e.seq, e.func, e.count, e.dtype,
                      e.peer_or_root);
  else
    n = std::snprintf(line + head, room, " %" PRIxPTR " %d\n", reinterpret_cast<uintptr_t>(e.stream),
                      e.captured ? 1 : 0);
  if (n > 0 && static_cast<size_t>(n) < room) Append(s, line, head + n);
}

// At exit, for processes that never destroy their communicators: write what is open and buffered.
void FlushAtExit() {
  State* s = g_state;
  std::lock_guard<std::mutex> lock(s->mu);
  for (Slot& e : s->slots)
    if (e.live) {
      e.live = false;
      if (!s->failed) Write(s, e, -1);
    }
  Flush(s);
}

// The slot behind a handle NCCL passes back, or null for anything that is not one of ours.
Slot* SlotOf(State* s, void* handle) {
  auto* p = static_cast<Slot*>(handle);
  if (p < s->slots || p >= s->slots + kSlots) return nullptr;
  return p;
}

v5::Result Init(void** context, uint64_t comm_id, int* mask, const char* comm_name, int nnodes, int nranks, int rank,
                v5::DebugLogger) {
  // Created once, never destroyed: NCCL may call in from any thread until the process exits.
  static State* const created = [] {
    g_state = new State;
    std::atexit(FlushAtExit);
    return g_state;
  }();
  State* s = created;
  std::lock_guard<std::mutex> lock(s->mu);
  auto* ctx = new Context{comm_id, rank, nranks};
  *context = ctx;
  *mask = s->failed ? 0 : kMask;
  if (s->failed) return v5::kSuccess;
  char name[64];
  CopyWord(name, sizeof name, comm_name);
  char line[160];
  Append(s, line,
         std::snprintf(line, sizeof line, "comm %016" PRIx64 " %d %d %d %s\n", comm_id, rank, nranks, nnodes, name));
  return v5::kSuccess;
}

v5::Result StartEvent(void* context, void** handle, v5::EventDescr* d) {
  *handle = nullptr;
  State* s = g_state;
  if (!s || !context || !d || !(d->type & kMask)) return v5::kSuccess;
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->failed) return v5::kSuccess;
  // NCCL numbers collectives only: the k-th Send to a peer pairs with the peer's k-th Recv. Counted
  // for every send and receive, recorded or not, so that the ranks' numbers agree.
  uint64_t p2p_seq = 0;
  char p2p_func[24] = {};
  if (d->type == v5::kP2p) {
    CopyWord(p2p_func, sizeof p2p_func, d->p2p.func);
    p2p_seq = s->p2p_seq[{static_cast<const Context*>(context)->comm, p2p_func, d->p2p.peer}]++;
  }
  if (const RecordingFn gate = TraceGate(); gate && gate() == 0) return v5::kSuccess;
  Slot* e = nullptr;
  for (size_t tries = 0; tries < kSlots && !e; ++tries) {
    Slot* c = &s->slots[s->cursor];
    s->cursor = (s->cursor + 1) % kSlots;
    if (!c->live) e = c;
  }
  if (!e) return v5::kSuccess;  // kSlots events open at once: this one is not recorded
  const Slot* parent = SlotOf(s, d->parentObj);
  *e = Slot{};
  e->id = s->next_id++;
  e->type = d->type;
  e->live = true;
  e->ctx = static_cast<const Context*>(context);
  e->start_ns = NowNs();
  e->tid = static_cast<long>(syscall(SYS_gettid));
  e->group = d->type == v5::kGroupApi ? e->id : parent ? parent->group : 0;
  e->captured = parent && parent->captured;
  switch (d->type) {
    case v5::kGroupApi:
      e->captured |= d->groupApi.graphCaptured;
      break;
    case v5::kCollApi:
      e->captured |= d->collApi.graphCaptured;
      break;
    case v5::kP2pApi:
      e->captured |= d->p2pApi.graphCaptured;
      break;
    case v5::kColl:
      e->seq = d->coll.seqNumber;
      e->count = d->coll.count;
      e->peer_or_root = d->coll.root;
      e->channels = d->coll.nChannels;
      CopyWord(e->func, sizeof e->func, d->coll.func);
      CopyWord(e->dtype, sizeof e->dtype, d->coll.datatype);
      CopyWord(e->algo, sizeof e->algo, d->coll.algo);
      CopyWord(e->proto, sizeof e->proto, d->coll.proto);
      break;
    case v5::kP2p:
      e->count = d->p2p.count;
      e->peer_or_root = d->p2p.peer;
      std::memcpy(e->func, p2p_func, sizeof e->func);
      CopyWord(e->dtype, sizeof e->dtype, d->p2p.datatype);
      e->seq = p2p_seq;
      break;
    case v5::kKernelLaunch:
      e->stream = d->kernelLaunch.stream;
      break;
    default:
      break;
  }
  *handle = e;
  return v5::kSuccess;
}

v5::Result StopEvent(void* handle) {
  State* s = g_state;
  if (!s || !handle) return v5::kSuccess;
  std::lock_guard<std::mutex> lock(s->mu);
  Slot* e = SlotOf(s, handle);
  if (!e || !e->live) return v5::kSuccess;
  e->live = false;
  if (!s->failed) Write(s, *e, NowNs());
  return v5::kSuccess;
}

v5::Result RecordEventState(void*, v5::EventState, v5::EventStateArgs*) { return v5::kSuccess; }

v5::Result Finalize(void* context) {
  State* s = g_state;
  if (!s || !context) return v5::kSuccess;
  std::lock_guard<std::mutex> lock(s->mu);
  auto* ctx = static_cast<Context*>(context);
  // Events NCCL never stopped (an aborted communicator) are written with end -1.
  for (Slot& e : s->slots)
    if (e.live && e.ctx == ctx) {
      e.live = false;
      if (!s->failed) Write(s, e, -1);
    }
  Flush(s);
  delete ctx;
  return v5::kSuccess;
}

}  // namespace

// The symbol NCCL 2.28 looks up in the library NCCL_PROFILER_PLUGIN names.
extern "C" {
__attribute__((visibility("default")))
emo::nccl_v5::Profiler ncclProfiler_v5 = {"emo", Init, StartEvent, StopEvent, RecordEventState, Finalize};
}
