// replay_workload.cc — a real trace as a simulator program (see replay_workload.h).
#include "sim/replay_workload.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "sim/device_spec.h"
#include "sim/engine_constants.h"
#include "sim/replay_kernels.h"

namespace emo::sim {
namespace {

// Prefixes an NCCL kernel replayed without a collective (kNoPeer in the header).
const std::string kNoPeer = "(no peer traced) ";

CollectiveKind CollectiveOf(const std::string& name) {
  if (Has(name, "AllGather")) return CollectiveKind::kAllGather;
  if (Has(name, "ReduceScatter")) return CollectiveKind::kReduceScatter;
  if (Has(name, "SendRecv") || Has(name, "Send") || Has(name, "Recv")) return CollectiveKind::kSendRecv;
  if (Has(name, "AllToAll")) return CollectiveKind::kAllToAll;
  return CollectiveKind::kAllReduce;
}

class Replayer {
 public:
  Replayer(const Trace& t, const Graph& g, const DeviceSpec& spec, Program* p) : t_(t), g_(g), spec_(spec), p_(p) {}

  void Run() {
    p_->ranks.resize(t_.ranks.size());
    // Node of each op and call, per rank.
    op_node_.resize(t_.ranks.size());
    call_node_.resize(t_.ranks.size());
    for (size_t r = 0; r < t_.ranks.size(); ++r) {
      op_node_[r].assign(t_.ranks[r].ops.size(), UINT32_MAX);
      call_node_[r].assign(t_.ranks[r].calls.size(), UINT32_MAX);
    }
    for (uint32_t v = 0; v < g_.nodes(); ++v) {
      if (g_.source[v] < 0) continue;
      size_t r = static_cast<size_t>(g_.rank[v]);
      if (IsGpu(g_.kind[v]))
        op_node_[r][static_cast<size_t>(g_.source[v])] = v;
      else if (g_.kind[v] == NodeKind::kCpuCall)
        call_node_[r][static_cast<size_t>(g_.source[v])] = v;
    }
    Collectives();
    for (size_t r = 0; r < t_.ranks.size(); ++r) Rank(r);
  }

 private:
  // Collective barriers of the graph become NCCL groups; each participant op gets its group.
  void Collectives() {
    std::map<uint32_t, std::vector<uint32_t>> by_barrier;  // barrier node -> participant nodes
    for (uint32_t v = 0; v < g_.nodes(); ++v)
      for (uint32_t k = g_.pred_begin[v]; k < g_.pred_begin[v + 1]; ++k)
        if (g_.pred_kind[k] == EdgeKind::kCollective) by_barrier[g_.pred[k]].push_back(v);
    // (ranks, process group, collective kind) -> group
    std::map<std::tuple<std::vector<int32_t>, uint32_t, CollectiveKind>, int32_t> groups;
    for (auto& [barrier, members] : by_barrier) {
      std::vector<int32_t> ranks;
      for (uint32_t v : members) ranks.push_back(g_.rank[v]);
      std::sort(ranks.begin(), ranks.end());
      ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
      if (ranks.size() != members.size()) continue;  // two ops of one rank: not a collective we can replay
      const GpuOp& first =
          t_.ranks[static_cast<size_t>(g_.rank[members[0]])].ops[static_cast<size_t>(g_.source[members[0]])];
      CollectiveKind kind = CollectiveOf(t_.names.Get(first.name));
      // NCCL runs all-to-all as grouped SendRecv kernels on every rank.
      if (kind == CollectiveKind::kSendRecv && ranks.size() > 2) kind = CollectiveKind::kAllToAll;
      auto key = std::make_tuple(ranks, first.process_group, kind);
      auto it = groups.find(key);
      if (it == groups.end()) {
        Group grp;
        grp.ranks = ranks;
        grp.kind = kind;
        grp.name = (first.process_group ? t_.names.Get(first.process_group) + "-" : std::string("replay-")) +
                   std::to_string(groups.size());
        p_->groups.push_back(grp);
        it = groups.emplace(key, static_cast<int32_t>(p_->groups.size() - 1)).first;
      }
      const Group& grp = p_->groups[static_cast<size_t>(it->second)];
      double n = static_cast<double>(grp.ranks.size());
      double factor = CollectiveBusFactor(grp.kind, n);
      // The transfer time the graph kept (waiting for peers trimmed), averaged over the members,
      // gives the bytes each contributes.
      double transfer_ns = 0;
      for (uint32_t v : members) transfer_ns += g_.duration[v] / static_cast<double>(members.size());
      double bytes = std::max(0.0, (transfer_ns - kCollectiveLatencyNs) * 1e-9) * p_->link_bytes_per_s / factor;
      for (uint32_t v : members) collective_[v] = {it->second, bytes};
    }
  }

  // `name` is the kernel's traced name (its characteristics are drawn from it), `shown` the name the
  // program gives it.
  int32_t KernelFor(const std::string& name, const std::string& shown, uint32_t name_id, ReplayKernelClass cls,
                    double seconds) {
    // One kernel per name and 2 % duration bucket keeps the engine's per-kernel cost cache small.
    int bucket = static_cast<int>(std::lround(std::log(std::max(seconds, 1e-7)) / std::log(1.02)));
    auto key = std::make_pair(name_id, bucket);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) return it->second;
    const double measured_s = std::pow(1.02, bucket);
    p_->kernels.push_back({shown, ReplayKernelTraits(name, cls, measured_s, spec_), measured_s});
    int32_t id = static_cast<int32_t>(p_->kernels.size() - 1);
    kernels_.emplace(key, id);
    return id;
  }

  void Rank(size_t r) {
    const RankTrace& rt = t_.ranks[r];
    RankProgram& rp = p_->ranks[r];
    // Local stream numbers.
    std::map<int64_t, int32_t> stream;
    for (const GpuOp& o : rt.ops) stream.emplace(o.stream, 0);
    int32_t next = 0;
    for (auto& [id, local] : stream) local = next++;
    rp.streams = std::max(1, next);
    // Calls by correlation, and the ops each call launched.
    std::unordered_map<int64_t, uint32_t> call_of;
    for (uint32_t i = 0; i < rt.calls.size(); ++i)
      if (rt.calls[i].correlation >= 0) call_of.emplace(rt.calls[i].correlation, i);
    std::vector<std::vector<uint32_t>> ops_of(rt.calls.size());
    std::vector<uint32_t> launcher(rt.ops.size(), UINT32_MAX);
    for (uint32_t i = 0; i < rt.ops.size(); ++i) {
      auto it = call_of.find(rt.ops[i].correlation);
      if (it != call_of.end()) ops_of[it->second].push_back(i), launcher[i] = it->second;
    }

    // Each thread's calls in the order they started; a call inside the thread's previous call is
    // not replayed (the graph merged it into that call).
    std::vector<uint32_t> order(rt.calls.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    auto earlier = [&](uint32_t a, uint32_t b) {
      return std::make_pair(rt.calls[a].start_ns, a) < std::make_pair(rt.calls[b].start_ns, b);
    };
    std::sort(order.begin(), order.end(), earlier);
    std::vector<std::vector<uint32_t>> thread_calls(rt.threads.size());
    std::vector<uint8_t> replayed(rt.calls.size(), 0);
    {
      std::vector<int64_t> thread_prev(rt.threads.size(), g_.origin_ns);
      for (uint32_t ci : order) {
        const CpuCall& c = rt.calls[ci];
        int64_t& prev = thread_prev[c.thread];
        if (c.end_ns <= prev && c.start_ns < prev) continue;  // inside the previous call
        prev = std::max(prev, c.end_ns);
        replayed[ci] = 1;
        thread_calls[c.thread].push_back(ci);
      }
    }

    // Event waits: record after the source op's launch, wait before the target op's launch.
    std::vector<std::vector<Instr>> before(rt.calls.size()), after(rt.calls.size());
    std::set<std::pair<uint32_t, uint32_t>> host_order;  // (call a, call b): b is issued after a
    auto keep_order = [&](uint32_t a, uint32_t b) {
      if (a == UINT32_MAX || b == UINT32_MAX || !replayed[a] || !replayed[b]) return;
      if (rt.calls[a].thread != rt.calls[b].thread && earlier(a, b)) host_order.insert({a, b});
    };
    for (uint32_t i = 0; i < rt.ops.size(); ++i) {
      uint32_t v = op_node_[r][i];
      if (v == UINT32_MAX || launcher[i] == UINT32_MAX) continue;
      for (uint32_t k = g_.pred_begin[v]; k < g_.pred_begin[v + 1]; ++k) {
        if (g_.pred_kind[k] != EdgeKind::kEventWait) continue;
        uint32_t src = static_cast<uint32_t>(g_.source[g_.pred[k]]);
        if (launcher[src] == UINT32_MAX) continue;
        Instr rec;
        rec.op = Op::kRecord;
        rec.event = rp.events;
        rec.stream = stream[rt.ops[src].stream];
        after[launcher[src]].push_back(rec);
        Instr wait;
        wait.op = Op::kWaitEvent;
        wait.event = rp.events++;
        wait.stream = stream[rt.ops[i].stream];
        before[launcher[i]].push_back(wait);
        keep_order(launcher[src], launcher[i]);
      }
    }

    // Several threads run concurrently. What one thread did before another in the trace, and
    // what the other depended on, is kept with host flags (program.h):
    // - the graph's cross-thread hand-offs: the blocked thread's gap becomes a wait for the
    //   waker's call, then the observed delay (the graph's own replay of the hand-off);
    // - the launch order of each stream, and of the rank's collectives across streams: NCCL
    //   kernels issued in another order than on the peers deadlock, in the engine as on hardware;
    // - an event's record before the stream wait on it, a GPU op's launch before a sync on it.
    std::vector<std::vector<std::pair<int32_t, double>>> handoff(rt.calls.size());  // (flag, delay ns)
    std::vector<std::vector<int32_t>> wait_before(rt.calls.size()), signal_after(rt.calls.size());
    std::vector<uint32_t> by_start(rt.ops.size());
    for (uint32_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
    std::stable_sort(by_start.begin(), by_start.end(), [&](uint32_t a, uint32_t b) {
      return std::make_pair(rt.ops[a].stream, rt.ops[a].start_ns) <
             std::make_pair(rt.ops[b].stream, rt.ops[b].start_ns);
    });
    for (size_t k = 1; k < by_start.size(); ++k)
      if (rt.ops[by_start[k - 1]].stream == rt.ops[by_start[k]].stream)
        keep_order(launcher[by_start[k - 1]], launcher[by_start[k]]);
    std::vector<uint32_t> collective_calls;
    for (uint32_t i = 0; i < rt.ops.size(); ++i)
      if (rt.ops[i].is_comm && launcher[i] != UINT32_MAX && collective_.count(op_node_[r][i]))
        collective_calls.push_back(launcher[i]);
    std::sort(collective_calls.begin(), collective_calls.end(), earlier);
    for (size_t k = 1; k < collective_calls.size(); ++k) keep_order(collective_calls[k - 1], collective_calls[k]);
    for (uint32_t ci = 0; ci < rt.calls.size(); ++ci) {
      const uint32_t v = call_node_[r][ci];
      if (v == UINT32_MAX || !replayed[ci]) continue;
      for (uint32_t k = g_.pred_begin[v]; k < g_.pred_begin[v + 1]; ++k) {
        const uint32_t u = g_.pred[k];
        if (g_.pred_kind[k] == EdgeKind::kSync && IsGpu(g_.kind[u]) && g_.source[u] >= 0)
          keep_order(launcher[static_cast<size_t>(g_.source[u])], ci);
        if (g_.pred_kind[k] != EdgeKind::kCrossThread || g_.kind[u] != NodeKind::kCpuCall || g_.source[u] < 0) continue;
        const uint32_t waker = static_cast<uint32_t>(g_.source[u]);
        if (!replayed[waker] || rt.calls[waker].thread == rt.calls[ci].thread || !earlier(waker, ci)) continue;
        signal_after[waker].push_back(rp.flags);
        handoff[ci].push_back({rp.flags++, static_cast<double>(g_.pred_latency[k])});
      }
    }
    for (const auto& [a, b] : host_order) {
      signal_after[a].push_back(rp.flags);
      wait_before[b].push_back(rp.flags++);
    }

    // One simulated thread per traced thread that made calls, in the trace's thread order; the
    // first leads the iterations: it lets the others start each iteration and ends it when they
    // all have, so that the trace (one iteration) repeats as a whole.
    std::vector<uint32_t> traced;
    for (uint32_t th = 0; th < thread_calls.size(); ++th)
      if (!thread_calls[th].empty()) traced.push_back(th);
    rp.threads.resize(std::max<size_t>(1, traced.size()));
    const int32_t start_flags = rp.flags;
    if (traced.size() > 1) rp.flags += 2 * static_cast<int32_t>(traced.size() - 1);  // start, done per follower
    auto flag_instr = [](Op op, int32_t flag) {
      Instr in;
      in.op = op;
      in.flag = flag;
      return in;
    };
    for (size_t t = 0; t < traced.size(); ++t) {
      auto& code = rp.threads[t].code;
      const int32_t follower_flags = start_flags + 2 * (static_cast<int32_t>(t) - 1);
      if (t == 0)
        for (size_t u = 1; u < traced.size(); ++u)
          code.push_back(flag_instr(Op::kSignal, start_flags + 2 * static_cast<int32_t>(u - 1)));
      else
        code.push_back(flag_instr(Op::kWait, follower_flags));
      EmitThread(r, thread_calls[traced[t]], ops_of, before, after, handoff, wait_before, signal_after, stream, &code);
      if (t == 0)
        for (size_t u = 1; u < traced.size(); ++u)
          code.push_back(flag_instr(Op::kWait, start_flags + 2 * static_cast<int32_t>(u - 1) + 1));
      else
        code.push_back(flag_instr(Op::kSignal, follower_flags + 1));
    }
  }

  // One thread's calls with the CPU time between them as measured, its host waits before a call
  // and its signals after.
  void EmitThread(size_t r, const std::vector<uint32_t>& calls, const std::vector<std::vector<uint32_t>>& ops_of,
                  const std::vector<std::vector<Instr>>& before, const std::vector<std::vector<Instr>>& after,
                  const std::vector<std::vector<std::pair<int32_t, double>>>& handoff,
                  const std::vector<std::vector<int32_t>>& wait_before,
                  const std::vector<std::vector<int32_t>>& signal_after, std::map<int64_t, int32_t>& stream,
                  std::vector<Instr>* out) {
    const RankTrace& rt = t_.ranks[r];
    std::vector<Instr>& code = *out;
    int64_t prev = g_.origin_ns;
    // CPU time the inserted cudaEventRecord/cudaStreamWaitEvent calls cost in the engine, taken
    // back from the following CPU gaps so that the CPU keeps its measured pace.
    double debt = 0;
    auto cpu = [&](double ns) {
      double repaid = std::min(std::max(ns, 0.0), debt);
      ns -= repaid, debt -= repaid;
      if (ns <= 0) return;
      Instr in;
      in.op = Op::kCpu;
      in.cpu_ns = ns;
      code.push_back(in);
    };
    auto flag = [&](Op op, int32_t f) {
      Instr in;
      in.op = op;
      in.flag = f;
      code.push_back(in);
    };
    for (uint32_t ci : calls) {
      const CpuCall& c = rt.calls[ci];
      if (handoff[ci].empty()) {
        cpu(static_cast<double>(std::max<int64_t>(0, c.start_ns - prev)));
      } else {  // blocked until another thread's call: wait for it, then the observed delay
        double delay = 0;
        for (const auto& [f, ns] : handoff[ci]) flag(Op::kWait, f), delay = std::max(delay, ns);
        cpu(delay);
      }
      for (int32_t f : wait_before[ci]) flag(Op::kWait, f);
      prev = std::max(prev, c.end_ns);
      for (const Instr& in : before[ci]) code.push_back(in), debt += kEventCallNs;
      double dur = static_cast<double>(c.end_ns - c.start_ns);
      switch (c.kind) {
        case CallKind::kLaunch:
        case CallKind::kBlockingCopy: {
          if (ops_of[ci].empty()) {
            cpu(dur);
            break;
          }
          cpu(dur - kLaunchCallNs * static_cast<double>(ops_of[ci].size()));
          for (uint32_t oi : ops_of[ci])
            code.push_back(OpInstr(rt, oi, stream[rt.ops[oi].stream], c.kind == CallKind::kBlockingCopy));
          break;
        }
        case CallKind::kStreamSync:
        case CallKind::kEventSync:
        case CallKind::kDeviceSync: {
          // What the graph says the call awaited; a device sync when it awaited several streams.
          uint32_t v = call_node_[r][ci];
          std::vector<int32_t> awaited;
          if (v != UINT32_MAX)
            for (uint32_t k = g_.pred_begin[v]; k < g_.pred_begin[v + 1]; ++k)
              if (g_.pred_kind[k] == EdgeKind::kSync) awaited.push_back(stream[g_.lane[g_.pred[k]]]);
          Instr in;
          in.op = awaited.size() == 1 && c.kind != CallKind::kDeviceSync ? Op::kStreamSync : Op::kDeviceSync;
          in.stream = awaited.size() == 1 ? awaited[0] : -1;
          code.push_back(in);
          break;
        }
        default:
          cpu(dur);
          break;
      }
      for (const Instr& in : after[ci]) code.push_back(in), debt += kEventCallNs;
      for (int32_t f : signal_after[ci]) flag(Op::kSignal, f);
    }
  }

  Instr OpInstr(const RankTrace& rt, uint32_t oi, int32_t stream, bool blocking) {
    const GpuOp& o = rt.ops[oi];
    const std::string& name = t_.names.Get(o.name);
    double seconds = static_cast<double>(o.end_ns - o.start_ns) * 1e-9;
    Instr in;
    in.stream = stream;
    if (o.kind == GpuOpKind::kMemcpy) {
      in.op = Op::kCopy;
      in.dir = Has(name, "HtoD")   ? CopyDir::kHostToDevice
               : Has(name, "DtoH") ? CopyDir::kDeviceToHost
                                   : CopyDir::kDeviceToDevice;
      in.pinned = !Has(name, "Pageable");
      in.blocking = blocking;
      in.bytes = o.bytes >= 0 ? static_cast<double>(o.bytes) : seconds * kHostLinkBps;
      return in;
    }
    auto coll = collective_.find(op_node_[RankIndex(rt)][oi]);
    if (o.is_comm && coll != collective_.end()) {
      in.op = Op::kCollective;
      in.group = coll->second.first;
      in.bytes = coll->second.second;
      in.kernel = KernelFor(name, name, o.name, ReplayKernelClass::kCommunication, 1e-6);
      return in;
    }
    in.op = Op::kLaunch;
    if (o.is_comm) {  // no peer in the trace to meet: a kernel of its measured time (see the header)
      in.kernel = KernelFor(name, kNoPeer + name, o.name, ReplayKernelClass::kCommunication, seconds);
      return in;
    }
    in.kernel =
        KernelFor(name, name, o.name,
                  o.kind == GpuOpKind::kMemset ? ReplayKernelClass::kCopy : ClassifyReplayKernel(name), seconds);
    return in;
  }

  size_t RankIndex(const RankTrace& rt) const { return static_cast<size_t>(&rt - t_.ranks.data()); }

  const Trace& t_;
  const Graph& g_;
  const DeviceSpec& spec_;
  Program* p_;
  std::vector<std::vector<uint32_t>> op_node_, call_node_;
  std::unordered_map<uint32_t, std::pair<int32_t, double>> collective_;  // op node -> (group, bytes)
  std::map<std::pair<uint32_t, int>, int32_t> kernels_;
};

}  // namespace

bool BuildReplayWorkload(const Trace& trace, const Graph& g, const std::string& device, Program* out,
                         std::string* err) {
  const DeviceSpec* spec = FindDevice(device);
  if (!spec) {
    *err = "unknown device '" + device + "'";
    return false;
  }
  Program p;
  p.name = "replay";
  p.device = spec->name;
  p.link_bytes_per_s = spec->link_bandwidth_bps;
  Replayer(trace, g, *spec, &p).Run();
  if (!Validate(p, err)) {
    *err = "replayed trace is not a valid program: " + *err;
    return false;
  }
  *out = std::move(p);
  return true;
}

}  // namespace emo::sim
