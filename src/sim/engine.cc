// engine.cc — discrete-event execution of simulated GPU workloads (see engine.h).
#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "sim/device_spec.h"
#include "sim/engine_constants.h"
#include "sim/event_queue.h"

namespace emo::sim {
namespace {

// What an event does; the queue (event_queue.h) keeps it in Ev::type.
enum EvType : uint8_t {
  kThreadResume,
  kStreamTry,
  kOpDone,
  kClockApply,
  kTick,
  kSensorOpen,
  kSensor,
  kUtilSample,
  kTimer,
  kPowerControl,
  kWake,
  kMemClockApply
};
// Periodic or follow-up events that do not by themselves keep a run alive.
inline bool Background(EvType t) {
  return t == kTick || t == kSensorOpen || t == kSensor || t == kUtilSample || t == kTimer || t == kPowerControl ||
         t == kWake;
}

// The power controller (SW power cap) acts on the power averaged over its window, once per window,
// moving the clock ceiling: the card's power sensor is read every 100 ms on A100/H100 ("Part-time
// Power Measurements", SC24, arXiv 2312.02741), and the cap is enforced on that averaged reading.
// Down by the relative excess times kCapGain (power grows faster than the clock, so half the excess
// in clock is about the step that lands on the limit); up one 15 MHz bin per window while the
// average is more than kCapHysteresis below the limit. kCapGain and kCapHysteresis are chosen
// (no published figure), to settle within a few windows and dither by one bin around the limit.
inline constexpr double kPowerControlPeriodNs = 100e6;
inline constexpr double kCapGain = 0.5;
inline constexpr double kCapHysteresis = 0.03;
// The default governor (no clock locked): clocks stay up through short waits and drop to the
// lowest clock after kIdleHoldNs without a GPU op; the next op finds the clock low and waits
// kIdleWakeNs for it to come back. Assumed figures (no published measurement found): NVML's
// GpuIdle throttle reason ("nothing is running on the GPU and the clocks are dropping to idle")
// names the behaviour, not its time constants.
inline constexpr double kIdleHoldNs = 200e6;
inline constexpr double kIdleWakeNs = 5e6;
// NCCL kernels run on SMs: while one transfers, it holds some of the GPU's SMs (and memory
// bandwidth), so compute kernels overlapped with it progress at (1 - kNcclSmShare) of their rate,
// and its own copy loop runs at the SM clock, so below kNcclClockKnee of the boost clock the
// transfer is limited by the clock rather than the link and slows as knee/f. The issue's 5-15 %
// slowdown of overlapped GEMMs (an all-gather's 24 CTAs on a 132-SM H100 push a one-wave GEMM into
// a second wave: NVIDIA developer forum, 2025) gives kNcclSmShare = 0.1 (~11 %); the knee (half the
// boost clock: NCCL's CTAs assumed to copy at twice the link rate at full clock) is assumed.
inline constexpr double kNcclSmShare = 0.1;
inline constexpr double kNcclClockKnee = 0.5;

// Work queued on a stream. One cache line: deep queues (thousands of launches ahead of the GPU)
// are written and read an item at a time.
struct alignas(64) Item {
  double ready = 0;  // earliest start
  double bytes = 0;
  double noise = 1;
  int64_t seq = -1;  // collective: order within its group on this rank; kernel: launch ordinal on its GPU
  int64_t correlation = -1;
  int32_t kernel = -1;
  int32_t event = -1;
  int32_t group = -1;
  int32_t wake_thread = -1;  // blocking copy: the thread waiting in the call
  uint32_t version = 0;      // record: version it completes; wait: version it needs
  enum Kind : uint8_t { kKernel, kCopy, kRecord, kWait, kCollective } kind = kKernel;
  CopyDir dir = CopyDir::kHostToDevice;
  bool pinned = true;
};
static_assert(sizeof(Item) == 64, "an Item fills one cache line");

// Items queued on a stream, first in first out: a ring buffer whose capacity is a power of two.
class ItemQueue {
 public:
  bool empty() const { return count_ == 0; }
  const Item& front() const { return buf_[head_]; }
  void push_back(const Item& it) {
    if (count_ == buf_.size()) Grow();
    buf_[(head_ + count_) & (buf_.size() - 1)] = it;
    ++count_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --count_;
  }

 private:
  void Grow() {
    std::vector<Item> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    for (size_t i = 0; i < count_; ++i) bigger[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    buf_.swap(bigger);
    head_ = 0;
  }
  std::vector<Item> buf_;
  size_t head_ = 0, count_ = 0;
};

struct Stream {
  int32_t rank = 0;
  int32_t local = 0;
  ItemQueue q;  // while busy, its front is the op in execution
  bool busy = false;
  double current_start = 0;
  uint64_t version = 0;       // stamps OpDone events; a stale one is ignored
  double predicted_end = -1;  // of the running op, as last scheduled
  int64_t enqueued = 0, completed = 0;
  double try_at = -1;  // a kStreamTry is pending for this time
};

// What the engine needs of a kernel's cost at one clock (every GPU has the same spec, so the
// GPUs share these).
struct CostEntry {
  double time_ns = -1;  // < 0 until evaluated
  double power_w = 0;
  double dram_util = 0;
};

// A GPU op in execution. Compute kernels progress at a rate set by the clock and by how many
// compute kernels share the GPU; copies and transfers end at a fixed time.
struct Running {
  int32_t stream;
  bool compute;
  int32_t kernel;        // compute kernels and collectives: cost lookup
  double remaining = 1;  // compute: fraction of work left
  double rate = 0;       // compute: fraction per ns
  double fixed_end = 0;  // others
  double extra_w = 0;    // copies: power above idle
  double dram = 0;       // copies: share of DRAM bandwidth kept busy
  double noise = 1;
};

struct Gpu {
  const DeviceSpec* spec = nullptr;
  double requested_mhz = 0, effective_mhz = 0;
  size_t requested_ci = 0, effective_ci = 0;  // indices of those clocks in spec->sm_clocks_mhz
  double power_limit = 0;
  double clock_lands_at = 0;            // when the last clock command issued takes effect
  size_t mem_mi = 0;                    // index in spec->mem_clocks_mhz of the memory clock in effect
  size_t mem_requested_mi = 0;          // ... and of the last one commanded
  double mem_lands_at = 0;              // when the last memory clock command issued takes effect
  bool locked = false;                  // a clock lock is in effect (else the default governor)
  size_t top_ci = 0, cap_ci = 0;        // boost ceiling; the power controller's clock ceiling
  double ctl_time = 0, ctl_energy = 0;  // the power controller's window start
  size_t window_peak_ci = 0;            // the highest clock in effect during the controller's window
  double idle_since = 0;                // when the last GPU op ended (running empty)
  bool waking = false;                  // the clock is coming back from the idle drop
  std::vector<Running> running;
  int n_compute = 0;                         // compute kernels in `running`
  double time_factor = 1, power_factor = 1;  // per-GPU x per-run variation (EngineOptions::variation)
  double last_update = 0;
  int resident = 0;  // streams with a kernel or NCCL kernel started and not done (NVML's "busy")
  double energy_j = 0, busy_ns = 0, power_w = 0;
  double mem_share = 0, mem_busy_ns = 0;  // DRAM bandwidth share in use now, and its integral
  double reported_energy_j = 0, sample_power_w = 0, sample_util = 0, sample_mem_util = 0;
  double win_time = 0, win_energy = 0;  // the power sensor's current window: start and energy then
  std::vector<double> power_samples;    // the last second's sensor samples (ring), for averaged power
  size_t n_samples = 0;                 // sensor samples taken
  double util_time = 0, util_busy = 0, util_mem_busy = 0;  // the utilisation period's start
  bool counting = false;                                   // a counter range is open
  CounterValues counters;
  int64_t kernels_launched = 0;                     // compute kernels launched so far: the next one's ordinal
  std::vector<std::pair<int64_t, int64_t>> ranges;  // profiled ranges of launch ordinals, sorted, disjoint
  double profiling_extra_ns = 0;                    // kernel time the profiler's replay passes added
  std::vector<CounterValues> range_counters;        // one per range
};

struct EventState {
  uint32_t recorded = 0, completed = 0;
  int32_t last_stream = -1;
  int64_t last_record_corr = -1;
  std::vector<int32_t> waiting_streams;
};

struct ThreadState {
  int32_t rank = 0, index = 0;
  const std::vector<Instr>* code = nullptr;  // one iteration
  size_t pc = 0;
  int iter = 0;
  size_t phase = 0;  // of the program (Program::phase_starts)
  bool done = false;
  bool background = false;  // Thread::background: repeats until the run ends
  // A blocking call in progress.
  // kFlag: waiting for a signal of host flag `target` (not an API call: nothing is recorded).
  enum Block : uint8_t { kNone, kEvent, kStream, kDevice, kCopy, kFlag } block = kNone;
  int32_t target = -1;
  uint32_t version = 0;
  std::vector<int64_t> counts;  // device sync: each stream's enqueued count at the call
  double call_start = 0;
  int64_t corr = -1;
  uint32_t call_name = 0;
  SyncRecord sync;
  bool has_sync = false;
};

}  // namespace

struct Engine::State {
  const Program& p;
  EngineOptions opt;
  // Pending events in two heaps, popped in one order: the work of threads and streams, and the
  // few long-lived periodic and timed events (telemetry, ticks, timers, clock changes), which
  // would otherwise deepen the busy heap.
  EventQueue queue, slow_queue;
  uint64_t seq = 0;
  int64_t work_events = 0;  // queued events other than ticks and telemetry
  double now = 0;
  std::mt19937_64 rng;           // rare draws: DVFS latency, telemetry jitter
  uint64_t noise_state;          // splitmix64 for the per-op noise (hot)
  uint64_t counter_noise_state;  // the same for activity windows' counters

  std::vector<Gpu> gpus;
  std::vector<double> cpu_factor;    // [rank]: this run's speed of the rank's host CPU work
  const DeviceSpec* spec = nullptr;  // of every GPU
  size_t n_kernels = 0;
  // Clock-major, so that the kernels at the clock in use lie together. A clock slot is the
  // memory clock's index × the SM clocks + the SM clock's index (Slot()).
  std::vector<CostEntry> cost;       // [slot * n_kernels + kernel], evaluated when first needed
  std::vector<KernelTraits> traits;  // [kernel]: the program's, with the hidden per-name factors
  std::vector<double> idle_w;        // [slot]
  std::vector<Stream> streams;       // all ranks, rank-major
  std::vector<int32_t> stream_base;  // rank -> index of its stream 0
  std::vector<EventState> events;
  std::vector<int32_t> event_base;
  std::vector<ThreadState> threads;
  std::vector<std::vector<int32_t>> rank_threads;
  // Host flags (Op::kSignal, Op::kWait), all ranks, rank-major: signals not yet taken, and the
  // threads waiting for one, first come first served.
  std::vector<int64_t> flag_signals;
  std::vector<std::vector<int32_t>> flag_waiters;
  std::vector<int32_t> flag_base;                                          // rank -> index of its flag 0
  std::vector<std::vector<int64_t>> group_seq;                             // [rank][group] collectives issued so far
  std::map<std::pair<int32_t, int64_t>, std::vector<int32_t>> rendezvous;  // (group, seq) -> streams arrived
  std::vector<std::pair<double, std::function<void(double)>>> ticks;
  std::vector<std::function<void(double)>> timers;
  std::vector<std::function<void(int, double)>> on_iteration;
  std::vector<std::function<void(int, const std::string&, bool, double)>> on_range;
  int64_t live_threads = 0, pending_items = 0, ops_executed = 0;
  int64_t next_corr = 1;
  std::vector<double> iteration_starts;
  std::vector<std::vector<double>> rank_iteration_starts;
  double end = 0;
  bool finished = false;
  bool ready = false;  // Setup succeeded
  std::string setup_error;

  Trace trace;
  std::vector<uint32_t> kernel_names;
  std::vector<uint32_t> group_names;  // [group]: interned when first needed; 0 until then
  uint32_t copy_names[3][2] = {};     // [dir][pinned]: interned when first needed; 0 until then
  std::vector<int16_t> call_kinds;    // [name id]: ClassifyCall's answer; -1 until asked
  uint32_t n_stream_query = 0;        // interned when first needed; 0 until then
  uint32_t n_launch, n_memcpy_async, n_memcpy, n_record, n_wait, n_event_sync, n_stream_sync, n_device_sync;

  State(const Program& prog, const EngineOptions& o)
      : p(prog), opt(o), rng(o.seed), noise_state(o.seed), counter_noise_state(o.seed ^ 0x5bd1e995a3c59e11ULL) {}

  // The uniform in (0, 1] that splitmix64 draws from state z.
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static double Uniform(uint64_t z) { return (static_cast<double>(Mix(z) >> 11) + 1) * 0x1.0p-53; }
  // Approximately standard normal: the Irwin-Hall sum of four uniforms, scaled to unit variance
  // (tails bounded at ±3.5, which suits noise on durations). The four draws are independent of
  // each other, so they are computed side by side from a local copy of the state.
  double Normal() { return Normal(noise_state); }
  static double Normal(uint64_t& state) {
    constexpr uint64_t kStep = 0x9e3779b97f4a7c15ULL;
    const uint64_t s = state;
    state = s + 4 * kStep;
    const double u1 = Uniform(s + kStep), u2 = Uniform(s + 2 * kStep), u3 = Uniform(s + 3 * kStep),
                 u4 = Uniform(s + 4 * kStep);
    return (u1 + u2 + u3 + u4 - 2) * 1.7320508075688772;
  }
  double Noise() {
    if (opt.noise <= 0) return 1;
    return std::max(0.5, 1 + opt.noise * Normal());
  }
  void Push(double t, EvType type, int32_t a, uint64_t arg = 0) {
    if (type == kThreadResume || type == kStreamTry || type == kOpDone)
      queue.push(t, seq++, arg, a, type);
    else
      slow_queue.push(t, seq++, arg, a, type);
    if (!Background(type)) ++work_events;
  }

  // --- GPU state -------------------------------------------------------------------------
  // The profiled range (index into g.ranges) holding launch ordinal `seq`, or -1.
  static int64_t RangeOf(const Gpu& g, int64_t seq) {
    auto r = std::upper_bound(g.ranges.begin(), g.ranges.end(), std::pair<int64_t, int64_t>(seq, INT64_MAX));
    if (r == g.ranges.begin() || std::prev(r)->second < seq) return -1;
    return std::prev(r) - g.ranges.begin();
  }
  size_t ClockIndex(const Gpu& g, double mhz) const {
    const auto& c = g.spec->sm_clocks_mhz;
    auto it = std::upper_bound(c.begin(), c.end(), static_cast<int>(std::lround(mhz)));
    return it == c.begin() ? 0 : static_cast<size_t>(it - c.begin() - 1);
  }
  size_t Slot(const Gpu& g, size_t ci) const { return g.mem_mi * spec->sm_clocks_mhz.size() + ci; }
  const CostEntry& Cost(const Gpu& g, int32_t kernel, size_t ci) {
    CostEntry& c = cost[Slot(g, ci) * n_kernels + static_cast<size_t>(kernel)];
    if (c.time_ns < 0) {
      const KernelCost k = EvaluateKernel(*spec, traits[static_cast<size_t>(kernel)], spec->sm_clocks_mhz[ci],
                                          spec->mem_clocks_mhz[g.mem_mi]);
      c.time_ns = k.time_s * 1e9;
      c.power_w = k.power_w;
      c.dram_util = k.dram_util;
    }
    return c;
  }
  // Power of the running mix at clock index ci; compute kernels use `share` of the SMs (the rest
  // held by NCCL kernels, whose power counts on its own).
  double Power(const Gpu& g, size_t ci, double share) {
    const double idle = idle_w[Slot(g, ci)];
    const int n = g.n_compute;
    double w = idle;
    for (const Running& r : g.running) {
      if (r.compute)
        w += (Cost(g, r.kernel, ci).power_w - idle) * share / n;
      else if (r.kernel >= 0)
        w += Cost(g, r.kernel, ci).power_w - idle;
      else
        w += r.extra_w;
    }
    return w;
  }
  // True when the default governor has dropped the idle GPU's clock.
  bool IdleDropped(const Gpu& g) const { return !g.locked && g.running.empty() && now - g.idle_since > kIdleHoldNs; }
  void Advance(Gpu& g) {
    double dt = now - g.last_update;
    if (dt <= 0) return;
    // Idle past the hold, the clock (and idle power) dropped at idle_since + hold: of dt, `high`
    // ran at the clock in effect and the rest at the lowest.
    const bool dropped = IdleDropped(g);
    const double high = dropped ? std::max(0.0, g.idle_since + kIdleHoldNs - g.last_update) : dt;
    if (dropped)
      g.energy_j += (g.power_w * high + idle_w[Slot(g, 0)] * g.power_factor * (dt - high)) * 1e-9;
    else
      g.energy_j += g.power_w * dt * 1e-9;
    if (g.counting) {  // an activity window: the SM cycles that elapsed
      const double mhz_ns = g.effective_mhz * high + g.spec->min_clock_mhz() * (dt - high);
      g.counters.elapsed_sm_cycles += mhz_ns * 1e-3 * g.spec->sm_count;
      g.counters.elapsed_s += dt * 1e-9;
    }
    if (g.resident > 0) g.busy_ns += dt;
    g.mem_busy_ns += g.mem_share * dt;
    for (Running& r : g.running)
      if (r.compute) r.remaining -= r.rate * dt;
    g.last_update = now;
  }
  // Sets the clock (requested, or lower where the power controller or the idle governor holds it)
  // and rates, power and completion events of the running ops.
  void Recompute(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    const size_t ci = g.waking ? 0 : std::min(g.requested_ci, g.cap_ci);
    g.effective_ci = ci;
    g.window_peak_ci = std::max(g.window_peak_ci, ci);
    g.effective_mhz = spec->sm_clocks_mhz[ci];
    if (opt.record_trace) RecordCounter(gi, kClockTrack, g.effective_mhz);
    // NCCL kernels transferring now (collectives run as non-compute ops with a kernel).
    bool comm = false;
    for (const Running& r : g.running) comm |= !r.compute && r.kernel >= 0;
    const double share = comm ? 1 - kNcclSmShare : 1;
    g.power_w = Power(g, ci, share) * g.power_factor;
    const int n = g.n_compute;
    double mem = 0;
    for (Running& r : g.running) {
      Stream& st = streams[static_cast<size_t>(r.stream)];
      double end_t;
      if (r.compute) {
        const CostEntry& c = Cost(g, r.kernel, ci);
        mem += c.dram_util / n;
        r.rate = share / (c.time_ns * r.noise * n);
        end_t = now + std::max(0.0, r.remaining) / r.rate;
      } else {
        mem += r.kernel >= 0 ? Cost(g, r.kernel, ci).dram_util : r.dram;
        end_t = r.fixed_end;
      }
      // Only a changed end needs a new completion event (the old one becomes stale).
      if (std::fabs(end_t - st.predicted_end) < 1e-3) continue;
      st.predicted_end = end_t;
      ++st.version;
      Push(end_t, kOpDone, r.stream, st.version);
    }
    g.mem_share = std::min(1.0, mem);
  }

  // --- trace recording ---------------------------------------------------------------------
  void RecordCall(const ThreadState& th, uint32_t name, double start, double end_t, int64_t corr) {
    if (!opt.record_trace) return;
    CpuCall c;
    c.start_ns = static_cast<int64_t>(start);
    c.end_ns = static_cast<int64_t>(end_t);
    c.correlation = corr;
    c.thread = static_cast<uint32_t>(th.index);
    c.name = name;
    if (name >= call_kinds.size()) call_kinds.resize(name + 1, -1);
    if (call_kinds[name] < 0) call_kinds[name] = static_cast<int16_t>(ClassifyCall(trace.names.Get(name)));
    c.kind = static_cast<CallKind>(call_kinds[name]);
    trace.ranks[static_cast<size_t>(th.rank)].calls.push_back(c);
  }
  void RecordSync(int32_t rank, const SyncRecord& s) {
    if (opt.record_trace) trace.ranks[static_cast<size_t>(rank)].syncs.push_back(s);
  }
  // GPU gi's telemetry as NVML reports it, in its rank's trace: the SM clock its work runs at,
  // at each change, and the power reading and the energy counter at each sensor update.
  static constexpr size_t kClockTrack = 0, kPowerTrack = 1, kEnergyTrack = 2;
  void RecordCounter(int32_t gi, size_t track, double value) {
    CounterTrack& c = trace.ranks[static_cast<size_t>(gi)].counters[track];
    if (track == kClockTrack && !c.value.empty() && c.value.back() == value) return;
    c.t_ns.push_back(static_cast<int64_t>(now));
    c.value.push_back(value);
  }
  static int64_t TraceStream(int32_t local) { return 7 + local; }

  // --- threads -------------------------------------------------------------------------------
  void Enqueue(int32_t sid, const Item& it) {
    Stream& st = streams[static_cast<size_t>(sid)];
    st.q.push_back(it);
    ++st.enqueued;
    ++pending_items;
    ScheduleTry(sid, it.ready);
  }
  void ScheduleTry(int32_t sid, double t) {
    Stream& st = streams[static_cast<size_t>(sid)];
    if (st.busy) return;  // OpDone tries the stream when its op ends
    t = std::max(t, now);
    if (st.try_at >= 0 && st.try_at <= t) return;
    st.try_at = t;
    Push(t, kStreamTry, sid);
  }
  // True when the blocking condition of a thread holds now.
  bool Unblocked(const ThreadState& th) const {
    switch (th.block) {
      case ThreadState::kEvent:
        return events[static_cast<size_t>(th.target)].completed >= th.version;
      case ThreadState::kStream:
        return streams[static_cast<size_t>(th.target)].completed >= th.counts[0];
      case ThreadState::kDevice:
        for (size_t s = 0; s < th.counts.size(); ++s)
          if (streams[static_cast<size_t>(stream_base[static_cast<size_t>(th.rank)]) + s].completed < th.counts[s])
            return false;
        return true;
      default:
        return false;
    }
  }
  void Finish(ThreadState& th, int32_t tid) {
    double end_t = now + kSyncReturnNs;
    RecordCall(th, th.call_name, th.call_start, end_t, th.corr);
    if (th.has_sync) RecordSync(th.rank, th.sync);
    th.block = ThreadState::kNone;
    Push(end_t, kThreadResume, tid);
  }
  void CheckBlocked(int32_t rank) {
    for (int32_t tid : rank_threads[static_cast<size_t>(rank)]) {
      ThreadState& th = threads[static_cast<size_t>(tid)];
      if (th.block != ThreadState::kNone && th.block != ThreadState::kCopy && th.block != ThreadState::kFlag &&
          Unblocked(th))
        Finish(th, tid);
    }
  }
  // Starts a blocking call; finishes it at once when nothing is outstanding.
  void Block(ThreadState& th, int32_t tid, uint32_t name, int64_t corr) {
    th.call_start = now;
    th.call_name = name;
    th.corr = corr;
    if (Unblocked(th)) Finish(th, tid);
  }

  // Resumes the thread at t, after the CPU work that follows in its code: nothing the thread
  // does between two API calls is visible to others, so one event covers both.
  // Ranges between them are passed at the time the thread reaches them (a timer when hooks listen).
  void Resume(ThreadState& th, int32_t tid, const std::vector<Instr>& code, double t) {
    const double cpu = cpu_factor[static_cast<size_t>(th.rank)];
    while (th.pc < code.size() && (code[th.pc].op == Op::kCpu || IsRange(code[th.pc].op))) {
      const Instr& in = code[th.pc++];
      if (in.op == Op::kCpu) {
        t += in.cpu_ns * cpu * Noise();
      } else if (!on_range.empty()) {
        const int32_t rank = th.rank, range = in.range;
        const bool push = in.op == Op::kRangePush;
        timers.push_back([this, rank, range, push](double at) { FireRange(rank, range, push, at); });
        Push(t, kTimer, static_cast<int32_t>(timers.size() - 1));
      }
    }
    Push(t, kThreadResume, tid);
  }
  static bool IsRange(Op op) { return op == Op::kRangePush || op == Op::kRangePop; }
  void FireRange(int32_t rank, int32_t range, bool push, double at) {
    for (auto& fn : on_range) fn(rank, p.ranges[static_cast<size_t>(range)], push, at);
  }

  void StepThread(int32_t tid) {
    ThreadState& th = threads[static_cast<size_t>(tid)];
    const std::vector<Instr>& code = *th.code;
    if (th.pc == code.size()) {
      th.pc = 0;
      if (++th.iter == opt.iterations && !th.background) {
        th.done = true;
        --live_threads;
        return;
      }
      if (th.phase < p.phase_starts.size() && th.iter == p.phase_starts[th.phase]) {
        th.code = &p.ranks[static_cast<size_t>(th.rank)].threads[static_cast<size_t>(th.index)].phase_code[th.phase];
        ++th.phase;
      }
    }
    if (th.pc == 0 && th.index == 0) {
      rank_iteration_starts[static_cast<size_t>(th.rank)].push_back(now);
      if (th.rank == 0) {
        iteration_starts.push_back(now);
        for (auto& fn : on_iteration) fn(th.iter, now);
      }
    }
    if (code.empty()) {
      Push(now, kThreadResume, tid);
      th.pc = code.size();
      return;
    }
    while (th.pc < code.size() && IsRange(code[th.pc].op)) {
      const Instr& r = code[th.pc++];
      if (!on_range.empty()) FireRange(th.rank, r.range, r.op == Op::kRangePush, now);
    }
    if (th.pc == code.size()) {  // the code ended in ranges
      Push(now, kThreadResume, tid);
      return;
    }
    const Instr& in = code[th.pc++];
    if (in.op == Op::kSignal || in.op == Op::kWait) {
      HostFlag(th, tid, code, in);
      return;
    }
    const int32_t sid = in.stream >= 0 ? stream_base[static_cast<size_t>(th.rank)] + in.stream : -1;
    const int32_t eid = in.event >= 0 ? event_base[static_cast<size_t>(th.rank)] + in.event : -1;
    const int64_t corr = next_corr++;
    th.has_sync = false;
    switch (in.op) {
      case Op::kCpu:
        Resume(th, tid, code, now + in.cpu_ns * cpu_factor[static_cast<size_t>(th.rank)] * Noise());
        return;
      case Op::kLaunch:
      case Op::kCollective: {
        double end_t = now + kLaunchCallNs * Noise();
        RecordCall(th, n_launch, now, end_t, corr);
        Item it;
        it.kind = in.op == Op::kLaunch ? Item::kKernel : Item::kCollective;
        it.ready = end_t + kLaunchLatencyNs;
        it.kernel = in.kernel;
        it.correlation = corr;
        it.noise = Noise();
        if (in.op == Op::kLaunch) it.seq = gpus[static_cast<size_t>(th.rank)].kernels_launched++;
        if (in.op == Op::kCollective) {
          it.group = in.group;
          it.seq = group_seq[static_cast<size_t>(th.rank)][static_cast<size_t>(in.group)]++;
          it.bytes = in.bytes;
        }
        Enqueue(sid, it);
        Resume(th, tid, code, end_t);
        return;
      }
      case Op::kCopy: {
        Item it;
        it.kind = Item::kCopy;
        it.bytes = in.bytes;
        it.dir = in.dir;
        it.pinned = in.pinned;
        it.correlation = corr;
        CopyName(in.dir, in.pinned);  // interned at the call, as the trace's names always were
        it.noise = Noise();
        // A synchronous copy, or one from pageable memory (staged by the CPU), holds the thread
        // until the copy is done.
        bool holds = in.blocking || (!in.pinned && in.dir != CopyDir::kDeviceToDevice);
        if (!holds) {
          double end_t = now + kCopyCallNs * Noise();
          RecordCall(th, n_memcpy_async, now, end_t, corr);
          it.ready = end_t + kLaunchLatencyNs;
          Enqueue(sid, it);
          Resume(th, tid, code, end_t);
        } else {
          it.ready = now + kCopyCallNs;
          it.wake_thread = tid;
          th.block = ThreadState::kCopy;
          th.call_start = now;
          th.call_name = in.blocking ? n_memcpy : n_memcpy_async;
          th.corr = corr;
          Enqueue(sid, it);
        }
        return;
      }
      case Op::kRecord: {
        double end_t = now + kEventCallNs * Noise();
        RecordCall(th, n_record, now, end_t, corr);
        EventState& ev = events[static_cast<size_t>(eid)];
        Item it;
        it.kind = Item::kRecord;
        it.ready = end_t;
        it.event = eid;
        it.version = ++ev.recorded;
        ev.last_stream = in.stream;
        ev.last_record_corr = corr;
        Enqueue(sid, it);
        Resume(th, tid, code, end_t);
        return;
      }
      case Op::kWaitEvent: {
        double end_t = now + kEventCallNs * Noise();
        RecordCall(th, n_wait, now, end_t, corr);
        EventState& ev = events[static_cast<size_t>(eid)];
        SyncRecord s;
        s.kind = SyncKind::kStreamWaitEvent;
        s.correlation = corr;
        s.stream = TraceStream(in.stream);
        s.wait_on_stream = ev.last_stream >= 0 ? TraceStream(ev.last_stream) : -1;
        s.record_correlation = ev.last_record_corr;
        s.event_id = in.event;
        RecordSync(th.rank, s);
        if (ev.recorded > 0) {
          Item it;
          it.kind = Item::kWait;
          it.ready = end_t;
          it.event = eid;
          it.version = ev.recorded;
          Enqueue(sid, it);
        }
        Resume(th, tid, code, end_t);
        return;
      }
      case Op::kEventSync: {
        EventState& ev = events[static_cast<size_t>(eid)];
        th.block = ThreadState::kEvent;
        th.target = eid;
        th.version = ev.recorded;
        th.sync = SyncRecord{};
        th.sync.kind = SyncKind::kEventSync;
        th.sync.correlation = corr;
        th.sync.wait_on_stream = ev.last_stream >= 0 ? TraceStream(ev.last_stream) : -1;
        th.sync.record_correlation = ev.last_record_corr;
        th.sync.event_id = in.event;
        th.has_sync = true;
        Block(th, tid, n_event_sync, corr);
        return;
      }
      case Op::kStreamSync:
        th.block = ThreadState::kStream;
        th.target = sid;
        th.counts.assign(1, streams[static_cast<size_t>(sid)].enqueued);
        th.sync = SyncRecord{};
        th.sync.kind = SyncKind::kStreamSync;
        th.sync.correlation = corr;
        th.sync.stream = TraceStream(in.stream);
        th.has_sync = true;
        Block(th, tid, n_stream_sync, corr);
        return;
      case Op::kStreamQuery: {
        if (n_stream_query == 0) n_stream_query = trace.names.Intern("cudaStreamQuery");
        const double end_t = now + kEventCallNs * Noise();
        RecordCall(th, n_stream_query, now, end_t, corr);
        Resume(th, tid, code, end_t);
        return;
      }
      case Op::kRangePush:
      case Op::kRangePop:
      case Op::kSignal:
      case Op::kWait:
        return;  // passed above
      case Op::kDeviceSync: {
        th.block = ThreadState::kDevice;
        int32_t n = p.ranks[static_cast<size_t>(th.rank)].streams;
        th.counts.resize(static_cast<size_t>(n));
        for (int32_t s = 0; s < n; ++s)
          th.counts[static_cast<size_t>(s)] =
              streams[static_cast<size_t>(stream_base[static_cast<size_t>(th.rank)] + s)].enqueued;
        th.sync = SyncRecord{};
        th.sync.kind = SyncKind::kContextSync;
        th.sync.correlation = corr;
        th.has_sync = true;
        Block(th, tid, n_device_sync, corr);
        return;
      }
    }
  }

  // A signal wakes the longest-waiting thread or is kept for the next wait; a wait takes a kept
  // signal or blocks. Neither takes time, so the thread goes on at once when it does not block.
  void HostFlag(ThreadState& th, int32_t tid, const std::vector<Instr>& code, const Instr& in) {
    const size_t fid = static_cast<size_t>(flag_base[static_cast<size_t>(th.rank)] + in.flag);
    std::vector<int32_t>& waiters = flag_waiters[fid];
    if (in.op == Op::kSignal) {
      if (waiters.empty()) {
        ++flag_signals[fid];
      } else {
        const int32_t w = waiters.front();
        waiters.erase(waiters.begin());
        threads[static_cast<size_t>(w)].block = ThreadState::kNone;
        Push(now, kThreadResume, w);
      }
    } else if (flag_signals[fid] > 0) {
      --flag_signals[fid];
    } else {
      th.block = ThreadState::kFlag;
      th.target = in.flag;
      waiters.push_back(tid);
      return;
    }
    Resume(th, tid, code, now);
  }

  uint32_t CopyName(CopyDir dir, bool pinned) {
    uint32_t& id = copy_names[static_cast<size_t>(dir)][pinned ? 1 : 0];
    if (id == 0) id = trace.names.Intern(CopyNameText(dir, pinned));
    return id;
  }
  static std::string CopyNameText(CopyDir dir, bool pinned) {
    const char* host = pinned ? "Pinned" : "Pageable";
    std::string n = dir == CopyDir::kHostToDevice   ? std::string("Memcpy HtoD (") + host + " -> Device)"
                    : dir == CopyDir::kDeviceToHost ? std::string("Memcpy DtoH (Device -> ") + host + ")"
                                                    : std::string("Memcpy DtoD (Device -> Device)");
    return n;
  }

  // --- streams -------------------------------------------------------------------------------
  void TryStream(int32_t sid) {
    Stream& st = streams[static_cast<size_t>(sid)];
    while (!st.busy && !st.q.empty()) {
      const Item& it = st.q.front();
      if (it.ready > now) {
        ScheduleTry(sid, it.ready);
        return;
      }
      switch (it.kind) {
        case Item::kRecord: {
          EventState& ev = events[static_cast<size_t>(it.event)];
          ev.completed = std::max(ev.completed, it.version);
          st.q.pop_front();
          Complete(st);
          for (int32_t w : ev.waiting_streams) ScheduleTry(w, now);  // schedules only: the list stays as is
          ev.waiting_streams.clear();
          CheckBlocked(st.rank);
          continue;
        }
        case Item::kWait: {
          EventState& ev = events[static_cast<size_t>(it.event)];
          if (ev.completed < it.version) {
            ev.waiting_streams.push_back(sid);
            return;
          }
          st.q.pop_front();
          Complete(st);
          CheckBlocked(st.rank);  // a stream or device sync may have waited for this marker
          continue;
        }
        case Item::kKernel:
        case Item::kCopy:
        case Item::kCollective:
          if (it.kind != Item::kCopy) {  // a kernel (an NCCL one too, while it waits) is resident
            Gpu& g = gpus[static_cast<size_t>(st.rank)];
            Advance(g);
            ++g.resident;
          }
          st.busy = true;  // the op stays at the front of the queue until it is done
          st.current_start = now;
          st.predicted_end = -1;
          Start(sid);
          return;
      }
    }
  }
  void Complete(Stream& st) {
    ++st.completed;
    --pending_items;
  }

  void Start(int32_t sid) {
    Stream& st = streams[static_cast<size_t>(sid)];
    Gpu& g = gpus[static_cast<size_t>(st.rank)];
    const Item& it = st.q.front();
    if (it.kind == Item::kCollective) {
      Arrive(sid);
      return;
    }
    Advance(g);
    Wake(st.rank, g);
    Running r;
    r.stream = sid;
    r.noise = it.noise;
    if (it.kind == Item::kKernel) {
      r.noise *= g.time_factor;
      if (RangeOf(g, it.seq) >= 0) r.noise *= kRangeProfilerPasses;  // every pass runs the kernel
      r.compute = true;
      r.kernel = it.kernel;
      ++g.n_compute;
    } else {
      r.compute = false;
      r.kernel = -1;
      double bps = it.dir == CopyDir::kDeviceToDevice ? g.spec->mem_bandwidth_bps * g.spec->dram_efficiency / 2
                   : it.pinned                        ? kHostLinkBps
                                                      : kHostLinkBps / 2;
      r.fixed_end = now + (it.bytes / bps * 1e9 + 2000) * it.noise;
      r.extra_w = it.dir == CopyDir::kDeviceToDevice ? g.spec->dram_j_per_byte * bps : 15.0;
      r.dram = std::min(1.0, (it.dir == CopyDir::kDeviceToDevice ? 2 : 1) * bps / g.spec->mem_bandwidth_bps);
    }
    g.running.push_back(r);
    Recompute(st.rank);
  }

  // A collective kernel reached the head of its stream; the transfer starts once every member
  // of the group has arrived at the same collective.
  void Arrive(int32_t sid) {
    const Item& it = streams[static_cast<size_t>(sid)].q.front();
    auto key = std::make_pair(it.group, it.seq);
    auto& arrived = rendezvous[key];
    arrived.push_back(sid);
    const Group& grp = p.groups[static_cast<size_t>(it.group)];
    if (arrived.size() < grp.ranks.size()) return;
    double n = static_cast<double>(grp.ranks.size());
    double factor = CollectiveBusFactor(grp.kind, n);
    double bytes = 0;
    for (int32_t s : arrived) bytes = std::max(bytes, streams[static_cast<size_t>(s)].q.front().bytes);
    // The slowest member's SM clock bounds NCCL's copy loop (kNcclClockKnee).
    double clock_slow = 1;
    for (int32_t s : arrived) {
      const Gpu& g = gpus[static_cast<size_t>(streams[static_cast<size_t>(s)].rank)];
      const double mhz = IdleDropped(g) || g.waking ? g.spec->min_clock_mhz() : g.effective_mhz;
      clock_slow = std::max(clock_slow, kNcclClockKnee * g.spec->boost_ceiling_mhz() / mhz);
    }
    double dur = (bytes * factor / p.link_bytes_per_s * 1e9 * clock_slow + kCollectiveLatencyNs) * it.noise;
    for (int32_t s : arrived) {
      Stream& st = streams[static_cast<size_t>(s)];
      Gpu& g = gpus[static_cast<size_t>(st.rank)];
      Advance(g);
      Wake(st.rank, g);
      Running r;
      r.stream = s;
      r.compute = false;
      r.kernel = st.q.front().kernel;
      r.fixed_end = now + dur;
      g.running.push_back(r);
      Recompute(st.rank);
    }
    rendezvous.erase(key);
  }

  // A GPU op starts on `g`: if the default governor had dropped the clock, it comes back only
  // after kIdleWakeNs.
  void Wake(int32_t gi, Gpu& g) {
    if (!IdleDropped(g)) return;
    g.waking = true;
    Push(now + kIdleWakeNs, kWake, gi);
  }
  // The power controller's step at the end of each window (see kPowerControlPeriodNs).
  void PowerControl(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    Advance(g);
    const double dt = now - g.ctl_time;
    const double avg_w = dt > 0 ? (g.energy_j - g.ctl_energy) / (dt * 1e-9) : 0;
    g.ctl_time = now, g.ctl_energy = g.energy_j;
    const size_t cur = std::min(g.requested_ci, g.cap_ci);
    // Too much power over the window: the ceiling steps down from the highest clock that ran in it
    // (a lock to a lower clock during the window already took some of the excess away, and the
    // ceiling must not fall below what drew the power; it would take seconds to climb back).
    const size_t peak = std::min(std::max(g.window_peak_ci, cur), g.cap_ci);
    g.window_peak_ci = g.effective_ci;
    if (avg_w > g.power_limit) {
      const double excess = (avg_w - g.power_limit) / avg_w;
      const double mhz = spec->sm_clocks_mhz[peak];
      const size_t steps = static_cast<size_t>(std::max(1.0, std::round(kCapGain * excess * mhz / 15)));
      g.cap_ci = peak > steps ? peak - steps : 0;
    } else if (g.cap_ci < g.top_ci && avg_w < g.power_limit * (1 - kCapHysteresis)) {
      g.cap_ci = std::max(g.cap_ci, cur) + 1;
      if (g.cap_ci >= g.requested_ci) g.cap_ci = g.top_ci;  // no longer binding
    }
    Recompute(gi);
    Push(now + kPowerControlPeriodNs, kPowerControl, gi);
  }

  void OpDone(int32_t sid, uint64_t version) {
    Stream& st = streams[static_cast<size_t>(sid)];
    if (!st.busy || version != st.version) return;  // rescheduled since
    Gpu& g = gpus[static_cast<size_t>(st.rank)];
    Advance(g);
    if (st.q.front().kind != Item::kCopy) --g.resident;
    for (size_t i = 0; i < g.running.size(); ++i)
      if (g.running[i].stream == sid) {
        g.n_compute -= g.running[i].compute;
        g.running[i] = g.running.back();
        g.running.pop_back();
        break;
      }
    if (g.running.empty()) g.idle_since = now;
    Recompute(st.rank);
    ++ops_executed;
    const Item& it = st.q.front();
    if (it.kind == Item::kKernel && (g.counting || !g.ranges.empty())) {
      // The range (by launch ordinal) this kernel belongs to, if any.
      const int64_t ri = RangeOf(g, it.seq);
      CounterValues* range = ri >= 0 ? &g.range_counters[static_cast<size_t>(ri)] : nullptr;
      if (g.counting || range) {
        const KernelTraits& k = traits[static_cast<size_t>(it.kernel)];
        const KernelCost cost_now =
            EvaluateKernel(*spec, k, spec->sm_clocks_mhz[g.effective_ci], spec->mem_clocks_mhz[g.mem_mi]);
        // A profiled kernel ran once per pass; each counter comes from one pass.
        double ran_s = (now - st.current_start) * 1e-9;
        if (range) {
          g.profiling_extra_ns += ran_s * 1e9 * (kRangeProfilerPasses - 1) / kRangeProfilerPasses;
          ran_s /= kRangeProfilerPasses;
        }
        // An activity window's noise comes from a stream of its own, so that opening one leaves
        // the run's noise as it was.
        uint64_t& noise = range ? noise_state : counter_noise_state;
        const CounterValues c =
            KernelCounters(*g.spec, k, cost_now, ran_s, [&](int) { return std::max(0.9, 1 + 0.01 * Normal(noise)); });
        if (g.counting) g.counters.Add(c);
        if (range) range->Add(c);
      }
    }
    if (opt.record_trace) {
      GpuOp o;
      o.start_ns = static_cast<int64_t>(st.current_start);
      o.end_ns = static_cast<int64_t>(now);
      o.correlation = it.correlation;
      o.stream = TraceStream(st.local);
      o.device = st.rank;
      o.name = it.kind == Item::kCopy ? CopyName(it.dir, it.pinned) : kernel_names[static_cast<size_t>(it.kernel)];
      o.kind = it.kind == Item::kCopy ? GpuOpKind::kMemcpy : GpuOpKind::kKernel;
      o.is_comm = it.kind == Item::kCollective;
      if (o.is_comm) {
        uint32_t& group_name = group_names[static_cast<size_t>(it.group)];
        if (group_name == 0) group_name = trace.names.Intern(p.groups[static_cast<size_t>(it.group)].name);
        o.process_group = group_name;
        o.collective_seq = it.seq;
      }
      if (it.kind != Item::kKernel) o.bytes = static_cast<int64_t>(it.bytes);
      trace.ranks[static_cast<size_t>(st.rank)].ops.push_back(o);
    }
    const int32_t wake_thread = it.wake_thread;
    st.busy = false;
    st.q.pop_front();  // `it` is gone from here on
    Complete(st);
    if (wake_thread >= 0) {
      ThreadState& th = threads[static_cast<size_t>(wake_thread)];
      th.has_sync = false;
      Finish(th, wake_thread);
    }
    CheckBlocked(st.rank);
    TryStream(sid);
  }

  // --- telemetry (NVML's semantics per device; see DeviceSpec) ------------------------------
  double SensorPeriodNs() const {
    return opt.telemetry_period_ms > 0 ? opt.telemetry_period_ms * 1e6 : spec->sensor_period_s * 1e9;
  }
  double SensorWindowNs() const {
    return opt.telemetry_period_ms > 0 ? SensorPeriodNs() : std::min(spec->sensor_window_s * 1e9, SensorPeriodNs());
  }
  double UtilPeriodNs() const {
    return opt.telemetry_period_ms > 0 ? opt.telemetry_period_ms * 1e6 : spec->util_period_s * 1e9;
  }
  // The sensor's window opens: it will average the power from now to its update.
  void SensorOpen(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    Advance(g);
    g.win_time = now, g.win_energy = g.energy_j;
  }
  // A sensor update: the energy counter catches up, a power sample averages the window, and the
  // power reading is that sample or the mean of the last power_average_s of samples.
  void Sensor(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    Advance(g);
    g.reported_energy_j = g.energy_j;
    const double dt = now - g.win_time;
    const double sample = dt > 0 ? (g.energy_j - g.win_energy) / (dt * 1e-9) : g.power_w;
    g.power_samples[g.n_samples++ % g.power_samples.size()] = sample;
    const size_t n = std::min(g.n_samples, g.power_samples.size());
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += g.power_samples[i];
    g.sample_power_w = sum / static_cast<double>(n);
    if (opt.record_trace) {
      RecordCounter(gi, kPowerTrack, g.sample_power_w);
      RecordCounter(gi, kEnergyTrack, g.reported_energy_j);
    }
    const double next = now + SensorPeriodNs();
    if (SensorWindowNs() < SensorPeriodNs())
      Push(next - SensorWindowNs(), kSensorOpen, gi);
    else
      g.win_time = now, g.win_energy = g.energy_j;
    Push(next, kSensor, gi);
  }
  // Utilisation over the last sample period: the share of it with a kernel resident.
  void UtilSample(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    Advance(g);
    const double dt = now - g.util_time;
    if (dt > 0) {
      g.sample_util = (g.busy_ns - g.util_busy) / dt;
      g.sample_mem_util = (g.mem_busy_ns - g.util_mem_busy) / dt;
    }
    g.util_time = now, g.util_busy = g.busy_ns, g.util_mem_busy = g.mem_busy_ns;
    Push(now + UtilPeriodNs(), kUtilSample, gi);
  }
  // The first updates, at a random phase within the first period (each GPU's firmware runs on its
  // own clock).
  void StartTelemetry(int32_t gi) {
    Gpu& g = gpus[static_cast<size_t>(gi)];
    const bool averaged = opt.telemetry_period_ms <= 0 && spec->power_average_s > 0;
    const double samples = averaged ? std::round(spec->power_average_s * 1e9 / SensorPeriodNs()) : 1;
    g.power_samples.assign(static_cast<size_t>(std::max(1.0, samples)), 0.0);
    g.sample_power_w = g.power_w;
    std::uniform_real_distribution<double> phase(0.0, 1.0);
    const double first = SensorPeriodNs() * phase(rng);
    if (SensorWindowNs() < SensorPeriodNs() && first > SensorWindowNs())
      Push(first - SensorWindowNs(), kSensorOpen, gi);
    Push(first, kSensor, gi);
    Push(UtilPeriodNs() * phase(rng), kUtilSample, gi);
  }

  // The per-GPU factors come from gpu_seed and the GPU's index (the same physical GPUs whatever
  // the run's seed); the per-run ones from the seed. Separate hash streams from the per-op noise,
  // so that adding them left every op's draw as it was.
  void DrawVariation() {
    cpu_factor.assign(gpus.size(), 1.0);
    if (opt.noise <= 0) return;
    const Variation& v = opt.variation;
    auto normal = [](uint64_t key) {
      double sum = 0;
      for (uint64_t i = 1; i <= 4; ++i) sum += Uniform(key + i * 0x9e3779b97f4a7c15ULL);
      return (sum - 2) * 1.7320508075688772;
    };
    auto factor = [&](double sigma, uint64_t key) { return std::max(0.5, 1 + sigma * normal(key)); };
    for (size_t i = 0; i < gpus.size(); ++i) {
      const uint64_t gpu_key = Mix(Mix(opt.gpu_seed ^ 0x2545f4914f6cdd1dULL) + i);
      const uint64_t run_key = Mix(Mix(opt.seed ^ 0x5851f42d4c957f2dULL) + i);
      Gpu& g = gpus[i];
      g.time_factor = factor(v.gpu_time, gpu_key * 3 + 1) * factor(v.run_time, run_key * 3 + 1);
      g.power_factor = factor(v.gpu_power, gpu_key * 3 + 2) * factor(v.run_power, run_key * 3 + 2);
      cpu_factor[i] = factor(v.run_cpu, run_key * 3 + 3);
    }
  }

  // Each kernel's hidden factors, from its name (the same name, the same code: the same factors)
  // and kernel_seed. A kernel with a measured time keeps it at the default clock.
  void DrawKernelFactors() {
    traits.resize(n_kernels);
    const double spread = opt.noise > 0 ? opt.variation.kernel : 0;
    for (size_t k = 0; k < n_kernels; ++k) {
      const Kernel& kernel = p.kernels[k];
      traits[k] = kernel.traits;
      if (spread <= 0) continue;
      ApplyHiddenFactors(DrawHiddenFactors(kernel.name, opt.kernel_seed, spread), &traits[k]);
      if (kernel.measured_s > 0) ScaleToTime(*spec, kernel.measured_s, spec->default_sm_clock_mhz, &traits[k]);
    }
  }

  bool Setup(std::string* err) {
    if (!Validate(p, err)) return false;
    spec = FindDevice(p.device);
    if (!spec) {
      *err = "unknown device '" + p.device + "'";
      return false;
    }
    n_kernels = p.kernels.size();
    cost.assign(spec->mem_clocks_mhz.size() * spec->sm_clocks_mhz.size() * n_kernels, CostEntry{});
    for (int mem : spec->mem_clocks_mhz)
      for (int mhz : spec->sm_clocks_mhz) idle_w.push_back(IdlePower(*spec, mhz, mem));
    group_names.assign(p.groups.size(), 0);
    const size_t ranks = p.ranks.size();
    gpus.resize(ranks);
    for (Gpu& g : gpus) {
      g.spec = spec;
      g.requested_mhz = g.effective_mhz = spec->default_sm_clock_mhz;
      g.requested_ci = g.effective_ci = ClockIndex(g, g.requested_mhz);
      g.power_limit = spec->power_limit_default_w;
      g.top_ci = g.cap_ci = g.requested_ci;
      g.mem_mi = g.mem_requested_mi = spec->mem_clocks_mhz.size() - 1;
    }
    DrawVariation();
    DrawKernelFactors();
    for (Gpu& g : gpus) g.power_w = idle_w[Slot(g, g.top_ci)] * g.power_factor;
    n_launch = trace.names.Intern("cudaLaunchKernel");
    n_memcpy_async = trace.names.Intern("cudaMemcpyAsync");
    n_memcpy = trace.names.Intern("cudaMemcpy");
    n_record = trace.names.Intern("cudaEventRecord");
    n_wait = trace.names.Intern("cudaStreamWaitEvent");
    n_event_sync = trace.names.Intern("cudaEventSynchronize");
    n_stream_sync = trace.names.Intern("cudaStreamSynchronize");
    n_device_sync = trace.names.Intern("cudaDeviceSynchronize");
    for (const Kernel& k : p.kernels) kernel_names.push_back(trace.names.Intern(k.name));
    rank_threads.resize(ranks);
    rank_iteration_starts.resize(ranks);
    group_seq.assign(ranks, std::vector<int64_t>(p.groups.size(), 0));
    trace.ranks.resize(ranks);
    for (size_t r = 0; r < ranks; ++r) {
      const RankProgram& rp = p.ranks[r];
      stream_base.push_back(static_cast<int32_t>(streams.size()));
      for (int32_t s = 0; s < rp.streams; ++s) {
        Stream st;
        st.rank = static_cast<int32_t>(r);
        st.local = s;
        streams.push_back(std::move(st));
      }
      event_base.push_back(static_cast<int32_t>(events.size()));
      events.resize(events.size() + static_cast<size_t>(rp.events));
      flag_base.push_back(static_cast<int32_t>(flag_signals.size()));
      flag_signals.resize(flag_signals.size() + static_cast<size_t>(rp.flags), 0);
      flag_waiters.resize(flag_signals.size());
      RankTrace& rt = trace.ranks[r];
      rt.source = p.name + " (simulated rank " + std::to_string(r) + ")";
      rt.rank = static_cast<int32_t>(r);
      rt.world_size = static_cast<int32_t>(ranks);
      rt.gpu_name = spec->name + " (simulated)";
      if (opt.record_trace)
        rt.counters = {{static_cast<int32_t>(r), "sm_clock", "MHz", {}, {}},
                       {static_cast<int32_t>(r), "power", "W", {}, {}},
                       {static_cast<int32_t>(r), "energy", "J", {}, {}}};
      for (size_t t = 0; t < rp.threads.size(); ++t) {
        ThreadState th;
        th.rank = static_cast<int32_t>(r);
        th.index = static_cast<int32_t>(t);
        th.code = &rp.threads[t].code;
        th.background = rp.threads[t].background;
        rank_threads[r].push_back(static_cast<int32_t>(threads.size()));
        threads.push_back(th);
        rt.threads.push_back({static_cast<int64_t>(1000 + r), static_cast<int64_t>(1000 + r + t)});
      }
    }
    for (size_t t = 0; t < threads.size(); ++t) Push(0, kThreadResume, static_cast<int32_t>(t));
    for (const ThreadState& th : threads) live_threads += th.background ? 0 : 1;
    for (size_t gi = 0; gi < gpus.size(); ++gi) {
      StartTelemetry(static_cast<int32_t>(gi));
      Push(kPowerControlPeriodNs, kPowerControl, static_cast<int32_t>(gi));
    }
    return true;
  }

  bool Loop(std::string* err) {
    while (!queue.empty() || !slow_queue.empty()) {
      EventQueue& q =
          slow_queue.empty() || (!queue.empty() && Earlier(queue.top(), slow_queue.top())) ? queue : slow_queue;
      const double t = q.top().t;  // field by field (see EventQueue)
      const uint64_t arg = q.top().arg;
      const int32_t a = q.top().a;
      const auto type = static_cast<EvType>(q.top().type);
      q.pop();
      if (!Background(type)) --work_events;
      if (!(t >= now)) {  // an event scheduled before its time: an engine bug, never silently run
        *err = "internal error: simulated time went backwards (an event at t=" + std::to_string(t) +
               " ns popped at t=" + std::to_string(now) + " ns)";
        return false;
      }
      now = t;
      if (now - (iteration_starts.empty() ? 0 : iteration_starts.back()) > opt.max_iteration_s * 1e9) {
        *err = "iteration " + std::to_string(iteration_starts.size()) + " of " + std::to_string(opt.iterations) +
               " has run for over " + std::to_string(static_cast<int64_t>(opt.max_iteration_s)) +
               " s of simulated time: are the workload's times (launch gap, link, CPU rates) in range?";
        return false;
      }
      switch (type) {
        case kThreadResume:
          StepThread(a);
          break;
        case kStreamTry:
          if (streams[static_cast<size_t>(a)].try_at == t) streams[static_cast<size_t>(a)].try_at = -1;
          TryStream(a);
          break;
        case kOpDone:
          OpDone(a, arg);
          break;
        case kClockApply: {
          Gpu& g = gpus[static_cast<size_t>(a)];
          Advance(g);
          g.locked = (arg >> 32) == 0;  // a reset hands the clock back to the default governor
          if (g.locked && g.running.empty() && now - g.idle_since > kIdleHoldNs) g.idle_since = now;
          g.requested_mhz = static_cast<double>(arg & 0xffffffffu);
          g.requested_ci = ClockIndex(g, g.requested_mhz);
          Recompute(a);
          break;
        }
        case kMemClockApply: {
          Gpu& g = gpus[static_cast<size_t>(a)];
          Advance(g);
          g.mem_mi = arg;
          Recompute(a);
          break;
        }
        case kPowerControl:
          PowerControl(a);
          break;
        case kWake: {
          Gpu& g = gpus[static_cast<size_t>(a)];
          Advance(g);
          g.waking = false;
          Recompute(a);
          break;
        }
        case kTick:
          ticks[static_cast<size_t>(a)].second(now);
          Push(now + ticks[static_cast<size_t>(a)].first * 1e6, kTick, a);
          break;
        case kSensorOpen:
          SensorOpen(a);
          break;
        case kSensor:
          Sensor(a);
          break;
        case kUtilSample:
          UtilSample(a);
          break;
        case kTimer: {
          auto fn = std::move(timers[static_cast<size_t>(a)]);
          fn(now);
          break;
        }
      }
      if (live_threads == 0 && pending_items == 0) {
        finished = true;
        end = now;
        for (Gpu& g : gpus) Advance(g);
        return true;
      }
      if (work_events == 0) break;
    }
    // Nothing can move: name who waits for what.
    std::string who;
    for (const ThreadState& th : threads)
      if (!th.done && th.block != ThreadState::kNone)
        who += " rank " + std::to_string(th.rank) + " thread " + std::to_string(th.index) + " blocked at instruction " +
               std::to_string(th.pc - 1) +
               (th.block == ThreadState::kFlag ? " (waits for host flag " + std::to_string(th.target) + ")" : "") + ";";
    for (const Stream& st : streams)
      if (st.busy && st.q.front().kind == Item::kCollective)
        who += " rank " + std::to_string(st.rank) + " stream " + std::to_string(st.local) +
               " waits in collective group " + std::to_string(st.q.front().group) + " #" +
               std::to_string(st.q.front().seq) + ";";
    *err = "deadlock at t=" + std::to_string(now / 1e6) + " ms:" + (who.empty() ? " nothing runnable" : who);
    return false;
  }
};

Engine::Engine(const Program& program, const EngineOptions& options) : s_(std::make_unique<State>(program, options)) {
  s_->ready = s_->Setup(&s_->setup_error);
}
Engine::~Engine() = default;

bool Engine::Run(std::string* err) {
  if (!s_->ready) {
    *err = s_->setup_error;
    return false;
  }
  if (s_->finished) {
    *err = "the engine has already run";
    return false;
  }
  if (!s_->Loop(err)) return false;
  if (s_->opt.record_trace)
    for (size_t r = 0; r < s_->trace.ranks.size(); ++r) FinishRank(r, s_->end, &s_->trace.ranks[r]);
  return true;
}

// A rank's recorded trace with its iterations, the last ending at end_ns, sorted.
void Engine::FinishRank(size_t r, double end_ns, RankTrace* rt) const {
  const auto& starts = s_->rank_iteration_starts[r];
  for (size_t i = 0; i < starts.size(); ++i) {
    Iteration it;
    it.start_ns = static_cast<int64_t>(starts[i]);
    it.end_ns = static_cast<int64_t>(i + 1 < starts.size() ? starts[i + 1] : end_ns);
    it.step = static_cast<int64_t>(i);
    rt->iterations.push_back(it);
  }
  rt->events_read = static_cast<int64_t>(rt->calls.size() + rt->ops.size() + rt->syncs.size());
  rt->Finish();
}

Trace Engine::TraceSoFar() const {
  Trace t;
  t.names = s_->trace.names;
  t.notes = s_->trace.notes;
  for (size_t r = 0; r < s_->trace.ranks.size(); ++r) {
    t.ranks.push_back(s_->trace.ranks[r]);
    if (!s_->finished) FinishRank(r, s_->now, &t.ranks.back());
  }
  return t;
}

void Engine::Every(double period_ms, std::function<void(double)> tick) {
  s_->ticks.emplace_back(period_ms, std::move(tick));
  s_->Push(s_->now, kTick, static_cast<int32_t>(s_->ticks.size() - 1));
}

void Engine::At(double t_ns, std::function<void(double)> fn) {
  s_->timers.push_back(std::move(fn));
  s_->Push(std::max(t_ns, s_->now), kTimer, static_cast<int32_t>(s_->timers.size() - 1));
}
void Engine::OnIterationStart(std::function<void(int, double)> fn) { s_->on_iteration.push_back(std::move(fn)); }
void Engine::OnRange(std::function<void(int, const std::string&, bool, double)> fn) {
  s_->on_range.push_back(std::move(fn));
}

int Engine::gpus() const { return static_cast<int>(s_->gpus.size()); }
const std::vector<int>& Engine::SupportedClocks(int gpu) const {
  return s_->gpus[static_cast<size_t>(gpu)].spec->sm_clocks_mhz;
}
void Engine::SetLockedClock(int gpu, int mhz) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  std::uniform_real_distribution<double> latency(g.spec->dvfs_latency_min_s, g.spec->dvfs_latency_max_s);
  // NVML accepts any clock of the table; none runs above the V/f curve's top (the boost ceiling).
  const int clamped = std::clamp(mhz, g.spec->min_clock_mhz(), g.spec->boost_ceiling_mhz());
  // The driver applies clock commands in the order they were issued: a later command never lands
  // before an earlier one (events at one time run in push order), so the last command wins.
  g.clock_lands_at = std::max(s_->now + latency(s_->rng) * 1e9, g.clock_lands_at);
  s_->Push(g.clock_lands_at, kClockApply, gpu, static_cast<uint64_t>(clamped));
}
void Engine::ResetClock(int gpu) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  std::uniform_real_distribution<double> latency(g.spec->dvfs_latency_min_s, g.spec->dvfs_latency_max_s);
  g.clock_lands_at = std::max(s_->now + latency(s_->rng) * 1e9, g.clock_lands_at);
  s_->Push(g.clock_lands_at, kClockApply, gpu, static_cast<uint64_t>(g.spec->default_sm_clock_mhz) | (1ull << 32));
}
const std::vector<int>& Engine::SupportedMemoryClocks(int gpu) const {
  return s_->gpus[static_cast<size_t>(gpu)].spec->mem_clocks_mhz;
}
void Engine::SetMemoryClock(int gpu, int mhz) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  std::uniform_real_distribution<double> latency(g.spec->dvfs_latency_min_s, g.spec->dvfs_latency_max_s);
  // The highest supported memory clock not above the request (NVML takes only listed ones).
  const std::vector<int>& c = g.spec->mem_clocks_mhz;
  const auto it = std::upper_bound(c.begin(), c.end(), mhz);
  const uint64_t mi = it == c.begin() ? 0 : static_cast<uint64_t>(it - c.begin() - 1);
  g.mem_requested_mi = mi;
  g.mem_lands_at = std::max(s_->now + latency(s_->rng) * 1e9, g.mem_lands_at);
  s_->Push(g.mem_lands_at, kMemClockApply, gpu, mi);
}
void Engine::ResetMemoryClock(int gpu) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  // Nothing to undo when the last command, if any, was already the default (so that a reset of an
  // unlocked GPU leaves the run, its random latencies included, as it was).
  if (g.mem_requested_mi + 1 < g.spec->mem_clocks_mhz.size()) SetMemoryClock(gpu, g.spec->mem_clock_mhz);
}
double Engine::MemoryClockMhz(int gpu) const {
  const Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  return g.spec->mem_clocks_mhz[g.mem_mi];
}
void Engine::SetPowerLimit(int gpu, double watts) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  s_->Advance(g);
  g.power_limit = std::clamp(watts, g.spec->power_limit_min_w, g.spec->power_limit_max_w);
  s_->Recompute(gpu);
}
double Engine::PowerLimit(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].power_limit; }
void Engine::PowerLimitRange(int gpu, double* min_w, double* max_w) const {
  const DeviceSpec& spec = *s_->gpus[static_cast<size_t>(gpu)].spec;
  *min_w = spec.power_limit_min_w;
  *max_w = spec.power_limit_max_w;
}
double Engine::EnergyCounterJ(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].reported_energy_j; }
double Engine::PowerW(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].sample_power_w; }
double Engine::Utilization(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].sample_util; }
double Engine::MemoryUtilization(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].sample_mem_util; }
const std::string& Engine::DeviceName(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].spec->name; }
const DeviceSpec& Engine::Spec(int gpu) const { return *s_->gpus[static_cast<size_t>(gpu)].spec; }
double Engine::ClockMhz(int gpu) const {
  const Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  return s_->IdleDropped(g) ? g.spec->min_clock_mhz() : g.effective_mhz;
}
double Engine::EnergyCounterPeriodS(int) const { return s_->SensorPeriodNs() * 1e-9; }
double Engine::TimeFactor(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].time_factor; }
double Engine::PowerFactor(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].power_factor; }
double Engine::now_ns() const { return s_->now; }
void Engine::StartCounters(int gpu) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  s_->Advance(g);
  g.counting = true;
  g.counters = CounterValues{};
}
CounterValues Engine::StopCounters(int gpu) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  s_->Advance(g);
  g.counting = false;
  return g.counters;
}
void Engine::ProfileRanges(int gpu, std::vector<std::pair<int64_t, int64_t>> ranges) {
  Gpu& g = s_->gpus[static_cast<size_t>(gpu)];
  std::sort(ranges.begin(), ranges.end());
  g.ranges = std::move(ranges);
  g.range_counters.assign(g.ranges.size(), CounterValues{});
}
double Engine::ProfilingOverheadNs(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].profiling_extra_ns; }
const std::vector<CounterValues>& Engine::RangeCounters(int gpu) const {
  return s_->gpus[static_cast<size_t>(gpu)].range_counters;
}
int64_t Engine::kernels_launched(int gpu) const { return s_->gpus[static_cast<size_t>(gpu)].kernels_launched; }
const std::vector<double>& Engine::iteration_starts() const { return s_->iteration_starts; }
double Engine::end_ns() const { return s_->end; }
int64_t Engine::gpu_ops_executed() const { return s_->ops_executed; }
const Trace& Engine::trace() const { return s_->trace; }

}  // namespace emo::sim
