// program.cc — consistency checks of a simulator program (indices, streams, events, groups)
// before the engine runs it.
#include "sim/program.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "sim/device_spec.h"

namespace emo::sim {
namespace {

const char* OpName(Op op) {
  switch (op) {
    case Op::kCpu:
      return "cpu";
    case Op::kLaunch:
      return "launch";
    case Op::kCopy:
      return "copy";
    case Op::kRecord:
      return "record";
    case Op::kWaitEvent:
      return "wait_event";
    case Op::kEventSync:
      return "event_sync";
    case Op::kStreamSync:
      return "stream_sync";
    case Op::kDeviceSync:
      return "device_sync";
    case Op::kCollective:
      return "collective";
    case Op::kRangePush:
      return "range_push";
    case Op::kRangePop:
      return "range_pop";
    case Op::kSignal:
      return "signal";
    case Op::kWait:
      return "wait";
    case Op::kStreamQuery:
      return "stream_query";
  }
  return "?";
}

bool NonNegative(double x) { return std::isfinite(x) && x >= 0; }

bool IsComm(const std::string& kernel_name) { return kernel_name.rfind("nccl", 0) == 0; }

}  // namespace

bool Validate(const Program& p, std::string* err) {
  auto fail = [&](const std::string& what) {
    *err = what;
    return false;
  };
  if (p.ranks.empty()) return fail("program has no ranks");
  if (FindDevice(p.device) == nullptr) return fail("unknown device '" + p.device + "'");
  if (!NonNegative(p.link_bytes_per_s)) return fail("link_bytes_per_s must be a non-negative number");
  const int32_t nranks = static_cast<int32_t>(p.ranks.size());

  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const Kernel& kern = p.kernels[k];
    const KernelTraits& t = kern.traits;
    const std::string where = "kernel " + std::to_string(k) + " (" + kern.name + ")";
    if (kern.name.empty()) return fail("kernel " + std::to_string(k) + ": empty name");
    for (double x : {t.tensor_flop, t.fp32_flop, t.fp64_flop, t.int_ops, t.sfu_ops, t.lsu_ops, t.dram_read_bytes,
                     t.dram_write_bytes, t.l2_bytes, t.l1_bytes, t.shared_bytes, t.link_bytes, t.overhead_s})
      if (!NonNegative(x)) return fail(where + ": negative or non-finite work");
    if (!(t.occupancy > 0 && t.occupancy <= 1)) return fail(where + ": occupancy outside (0, 1]");
  }

  for (size_t g = 0; g < p.groups.size(); ++g) {
    const Group& grp = p.groups[g];
    const std::string where = "group " + std::to_string(g) + " (" + grp.name + ")";
    if (grp.ranks.empty()) return fail(where + ": no ranks");
    std::set<int32_t> seen;
    for (int32_t r : grp.ranks) {
      if (r < 0 || r >= nranks)
        return fail(where + ": rank " + std::to_string(r) + " out of range (" + std::to_string(nranks) + " ranks)");
      if (!seen.insert(r).second) return fail(where + ": rank " + std::to_string(r) + " listed twice");
    }
    if (grp.kind == CollectiveKind::kSendRecv && grp.ranks.size() != 2)
      return fail(where + ": a send/recv group has exactly 2 ranks");
    if (grp.ranks.size() > 1 && p.link_bytes_per_s <= 0)
      return fail(where + ": spans several GPUs but link_bytes_per_s is 0");
  }

  // bytes of each rank's n-th collective per group, to compare across members
  std::vector<std::vector<std::vector<double>>> coll_bytes(p.groups.size(),
                                                           std::vector<std::vector<double>>(p.ranks.size()));
  for (size_t k = 0; k < p.phase_starts.size(); ++k)
    if (p.phase_starts[k] < 1 || (k > 0 && p.phase_starts[k] <= p.phase_starts[k - 1]))
      return fail("phase " + std::to_string(k + 1) + " starts at iteration " + std::to_string(p.phase_starts[k]) +
                  ": phase starts must be positive and ascending");
  const size_t phases = p.phase_starts.size() + 1;
  for (int32_t r = 0; r < nranks; ++r) {
    const RankProgram& rp = p.ranks[static_cast<size_t>(r)];
    if (rp.threads.empty()) return fail("rank " + std::to_string(r) + ": no threads");
    if (rp.streams < 1) return fail("rank " + std::to_string(r) + ": needs at least one stream");
    if (rp.events < 0) return fail("rank " + std::to_string(r) + ": negative event count");
    if (rp.flags < 0) return fail("rank " + std::to_string(r) + ": negative flag count");
    if (rp.threads[0].background)
      return fail("rank " + std::to_string(r) + ": thread 0 marks the iterations and cannot be a background thread");
    for (size_t t = 0; t < rp.threads.size(); ++t)
      if (rp.threads[t].phase_code.size() != phases - 1)
        return fail("rank " + std::to_string(r) + " thread " + std::to_string(t) + ": code for " +
                    std::to_string(rp.threads[t].phase_code.size() + 1) + " phases, the program has " +
                    std::to_string(phases));
    for (size_t k = 0; k < phases; ++k) {
      auto code_of = [&](const Thread& th) -> const std::vector<Instr>& {
        return k == 0 ? th.code : th.phase_code[k - 1];
      };
      std::vector<bool> recorded(static_cast<size_t>(rp.events), false);
      for (const Thread& th : rp.threads)
        for (const Instr& in : code_of(th))
          if (in.op == Op::kRecord && in.event >= 0 && in.event < rp.events)
            recorded[static_cast<size_t>(in.event)] = true;
      // Signals and waits of each host flag in one iteration of this phase, over all threads.
      std::vector<int64_t> signals(static_cast<size_t>(rp.flags), 0), waits(static_cast<size_t>(rp.flags), 0);

      for (size_t t = 0; t < rp.threads.size(); ++t) {
        const std::vector<Instr>& code = code_of(rp.threads[t]);
        if (rp.threads[t].background) {
          double cpu_ns = 0;
          for (const Instr& in : code) {
            if (in.op == Op::kSignal || in.op == Op::kWait || in.op == Op::kCollective)
              return fail("rank " + std::to_string(r) + " background thread " + std::to_string(t) + ": " +
                          OpName(in.op) + " (a background thread may not use host flags or collectives)");
            if (in.op == Op::kCpu) cpu_ns += in.cpu_ns;
          }
          if (!(cpu_ns > 0))
            return fail("rank " + std::to_string(r) + " background thread " + std::to_string(t) +
                        ": its code takes no CPU time (it would repeat forever at one instant)");
        }
        for (size_t i = 0; i < code.size(); ++i) {
          const Instr& in = code[i];
          // Built only for a message (a program has up to millions of instructions).
          auto where = [&]() {
            return "rank " + std::to_string(r) + " thread " + std::to_string(t) +
                   (k > 0 ? " phase " + std::to_string(k) : std::string()) + " instr " + std::to_string(i) + " (" +
                   OpName(in.op) + ")";
          };
          const bool uses_stream = in.op == Op::kLaunch || in.op == Op::kCopy || in.op == Op::kRecord ||
                                   in.op == Op::kWaitEvent || in.op == Op::kStreamSync || in.op == Op::kCollective ||
                                   in.op == Op::kStreamQuery;
          if (uses_stream && (in.stream < 0 || in.stream >= rp.streams))
            return fail(where() + ": stream " + std::to_string(in.stream) + " out of range (" +
                        std::to_string(rp.streams) + " streams)");
          const bool uses_event = in.op == Op::kRecord || in.op == Op::kWaitEvent || in.op == Op::kEventSync;
          if (uses_event && (in.event < 0 || in.event >= rp.events))
            return fail(where() + ": event " + std::to_string(in.event) + " out of range (" +
                        std::to_string(rp.events) + " events)");
          if ((in.op == Op::kWaitEvent || in.op == Op::kEventSync) && !recorded[static_cast<size_t>(in.event)])
            return fail(where() + ": event " + std::to_string(in.event) + " is never recorded on this rank");
          switch (in.op) {
            case Op::kCpu:
              if (!NonNegative(in.cpu_ns)) return fail(where() + ": cpu_ns must be a non-negative number");
              break;
            case Op::kCopy:
              if (!NonNegative(in.bytes)) return fail(where() + ": bytes must be a non-negative number");
              break;
            case Op::kLaunch:
            case Op::kCollective: {
              if (in.kernel < 0 || in.kernel >= static_cast<int32_t>(p.kernels.size()))
                return fail(where() + ": kernel " + std::to_string(in.kernel) + " out of range (" +
                            std::to_string(p.kernels.size()) + " kernels)");
              const std::string& name = p.kernels[static_cast<size_t>(in.kernel)].name;
              if (in.op == Op::kLaunch && IsComm(name))
                return fail(where() + ": communication kernel " + name + " launched outside a collective");
              if (in.op == Op::kLaunch) break;
              if (!IsComm(name)) return fail(where() + ": collective kernel " + name + " is not an nccl* kernel");
              if (in.group < 0 || in.group >= static_cast<int32_t>(p.groups.size()))
                return fail(where() + ": group " + std::to_string(in.group) + " out of range (" +
                            std::to_string(p.groups.size()) + " groups)");
              const Group& grp = p.groups[static_cast<size_t>(in.group)];
              bool member = false;
              for (int32_t m : grp.ranks) member = member || m == r;
              if (!member)
                return fail(where() + ": rank is not a member of group " + std::to_string(in.group) + " (" + grp.name +
                            ")");
              if (!NonNegative(in.bytes)) return fail(where() + ": bytes must be a non-negative number");
              coll_bytes[static_cast<size_t>(in.group)][static_cast<size_t>(r)].push_back(in.bytes);
              break;
            }
            case Op::kRangePush:
            case Op::kRangePop:
              if (in.range < 0 || in.range >= static_cast<int32_t>(p.ranges.size()))
                return fail(where() + ": range " + std::to_string(in.range) + " out of range (" +
                            std::to_string(p.ranges.size()) + " ranges)");
              break;
            case Op::kSignal:
            case Op::kWait:
              if (in.flag < 0 || in.flag >= rp.flags)
                return fail(where() + ": flag " + std::to_string(in.flag) + " out of range (" +
                            std::to_string(rp.flags) + " flags)");
              ++(in.op == Op::kSignal ? signals : waits)[static_cast<size_t>(in.flag)];
              break;
            default:
              break;
          }
        }
      }
      // A flag awaited more often than signalled deadlocks; one signalled more often lets its
      // waiter fall behind by more every iteration.
      for (size_t f = 0; f < signals.size(); ++f)
        if (signals[f] != waits[f])
          return fail("rank " + std::to_string(r) + (k > 0 ? " phase " + std::to_string(k) : std::string()) +
                      ": flag " + std::to_string(f) + " is signalled " + std::to_string(signals[f]) +
                      " times per iteration and awaited " + std::to_string(waits[f]) +
                      " times (each signal needs one wait)");
    }
  }

  // The n-th collective of a reducing group moves the same bytes on every member (NCCL requires
  // equal counts). Missing collectives are left to the engine, which reports the deadlock.
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const Group& grp = p.groups[g];
    if (grp.kind == CollectiveKind::kSendRecv) continue;
    const std::vector<double>& ref = coll_bytes[g][static_cast<size_t>(grp.ranks[0])];
    for (int32_t r : grp.ranks) {
      const std::vector<double>& mine = coll_bytes[g][static_cast<size_t>(r)];
      for (size_t n = 0; n < std::min(ref.size(), mine.size()); ++n)
        if (mine[n] != ref[n])
          return fail("group " + std::to_string(g) + " (" + grp.name + "): collective " + std::to_string(n) + " has " +
                      std::to_string(mine[n]) + " bytes on rank " + std::to_string(r) + " but " +
                      std::to_string(ref[n]) + " on rank " + std::to_string(grp.ranks[0]));
    }
  }
  return true;
}

}  // namespace emo::sim
