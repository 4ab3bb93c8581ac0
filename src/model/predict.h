// predict.h — the prediction pass (the paper's Algorithm 1): one topological pass over the packed
// execution graph gives a traced run's time and energy under a clock schedule.
//
// What it is built from, once per trace: the graph and its packs, each pack's time and energy at
// every profiled clock (the pack model's tables; packs repeating a profiled one take its shape,
// scaled to their own measured time), the iteration starts, and each GPU's energy measured over
// the traced run at the default clocks. Time outside packs (communication, copies, idle gaps) draws
// the device profile's idle power at the clock in force; each pack's energy is its idle power over
// its time plus its dynamic energy (the rest), and the dynamic energies are multiplied by one
// factor per GPU, fitted so that the default schedule reproduces the measured energy (it absorbs
// the model's bias and the power of communication kernels running beside compute; scaling the
// idle share too would inflate the energy of low clocks, where packs run long).
//
// The pass: node v completes at C_v = d_v + max(anchor_v, max over preds k of C_k + latency).
// A compute kernel in pack p takes d_v · T_p(c) / T_p(c0), where c is the clock in force on its GPU
// when p's first kernel starts (the whole pack runs at it) and c0 the default. The clock in force
// at time t of iteration k is the last landing at or before t − S_k in the GPU's schedule, else
// the schedule's last clock (carried over from iteration k−1), else the default; S_k is iteration
// k's predicted start (the first node at or after its marker). A communication node (an NCCL
// kernel) takes d_v · ρ(c) / ρ(c0), c the clock in force when it starts and ρ the device's
// collective time ratio (PredictorInput::comm_time_ratio; without one, d_v). Landings are the times clocks take
// effect: a schedule is what the search chooses, the policy file holds the commands (landing
// minus the DVFS latency).
//
// With PredictorInput::split_at_landings (what emo optimize uses), a compute kernel instead runs at
// the clocks in force during it: from the one at its own start, each landing inside its span
// (before its iteration's schedule ends) switches the rest of its work to the new clock, at the
// rate d_v · T_p(c) / T_p(c0), and its share d_v / Σ_{u ∈ p} d_u of the pack's energy is split the
// same way. Without it a single kernel longer than the change points' spacing (a 112 ms FP32 GEMM)
// hides every landing inside it: the search put 210 MHz there, predicted +2 %, and the job ran
// 2.9 times as long.
//
// A pass can start part-way (RunFrom): given the state a pass for schedule A left behind, the pass
// for schedule B keeps A's results for every node before the first pack whose clock differs under B
// (clocks depend only on earlier nodes, so up to there the two passes are the same computation)
// and computes the rest; its result is bit for bit Run(B)'s. With split_at_landings the first pack
// kept out is the first whose members ran until at or past a landing where A and B differ.
//
// A CPU gap (the time between two API calls of a thread) with one predecessor, no anchor and a
// successor on its GPU finishes a fixed time after its predecessor under every schedule, so the
// pass folds it into its successors' edges (the latency becomes its edge's latency plus its
// duration, plus the next such gap's along a chain) and does not compute it: a third of a training
// job's graph, the same results but for rounding (bench/search_bench.cc: a pass 22-28 % faster).
//
// Energy, per GPU: Σ_p [P_idle(c_p) T_p(c_p) + k (E_p(c_p) − P_idle(c_p) T_p(c_p))]
//                 + P_idle(c̄) · (end − start − U · Σ_p T_p(c_p) / Σ_p T_p(c0)), where start is the
// first iteration's start if it precedes the graph's origin (host work before the first CUDA
// call), else 0, U
// is the union of the packs' spans at default clocks (time some pack runs), and c̄'s idle power the
// time-weighted mean over the GPU's schedule; under an empty schedule (clocks unlocked) the gaps
// draw the default idle power the traced run showed (PredictorInput::default_idle_power_w).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "pack/packer.h"

namespace emo {

inline constexpr double kMinEnergyScale = 0.25, kMaxEnergyScale = 4;

// A clock taking effect at t_ns after the iteration start; clock indexes the predictor's clocks.
struct Landing {
  double t_ns = 0;
  int clock = 0;
  bool operator==(const Landing&) const = default;
};
// Per GPU (rank index of the graph), landings sorted by t_ns. Missing or empty: default clock.
using Schedule = std::vector<std::vector<Landing>>;

struct PredictorInput {
  const Graph* graph = nullptr;
  const Packing* packing = nullptr;
  std::vector<int> clocks_mhz;  // ascending
  int default_clock = 0;        // index into clocks_mhz
  // Per pack (packing->packs() of them), [pack * clocks + clock]: time (s) and energy (J).
  std::vector<double> pack_time_s, pack_energy_j;
  std::vector<double> idle_power_w;  // per clock: the device's power when idle
  // Per GPU (graph rank): the power of its gaps under the default clocks, unlocked, as the traced
  // run showed them (the driver lowers an idle GPU's clock after a while); missing or 0: the idle
  // power at the default clock. A GPU whose schedule is empty stays unlocked and draws it.
  std::vector<double> default_idle_power_w;
  // Per GPU (graph rank): the time-weighted mean SM clock its packs ran at in the traced run, where
  // that is below the default clock (a power limit or a boost ceiling held it there); missing or 0:
  // not held. The search keeps such a GPU's clock at or below it (search/dp_search.h).
  std::vector<double> held_mhz;
  // Kernels follow the landings inside their span (see above); false: each pack runs at the clock
  // in force at its start, the paper's pass (search/mip_reference.h restates that one).
  bool split_at_landings = false;
  // Per clock: a collective's (NCCL kernel's) time at that clock over its time at the default
  // (DeviceProfile::collective_time_ratio: NCCL's copy loop runs on the SMs, so at low clocks it
  // takes longer); a communication node takes its traced duration times ratio[c] / ratio[c0], c
  // the clock in force on its GPU when it starts. Empty: communication does not follow the clock.
  std::vector<double> comm_time_ratio;
  std::vector<double> iteration_start_ns;  // observed starts (graph time), ascending; empty: one, at 0
  std::vector<double> measured_energy_j;   // per GPU (graph rank): energy of the traced run at default clocks,
                                           // from the first iteration's start (or graph time 0, if that is
                                           // earlier) to its end
};

class Predictor {
 public:
  struct Result {
    double end_ns = 0;                 // the run's predicted end (graph time)
    double energy_j = 0;               // all GPUs, the whole run
    std::vector<double> gpu_energy_j;  // per GPU
    std::vector<double> gpu_end_ns;    // per GPU: the latest finish of its nodes (graph time)
  };

  // What a pass leaves behind: enough for a later pass to start part-way (RunFrom). The pass writes
  // only into it, so passes with states of their own may run on separate threads.
  struct PassState {
    struct IterationWrite {  // the pass set iteration `iteration`'s start at node `node`
      uint32_t node;
      int32_t iteration;
      double start_ns;
      bool known;  // from its marker node (final), else a guess from a pack's delay
    };
    std::vector<double> finish_ns;     // per node (not computed for the CPU gaps the pass folds: see Init)
    std::vector<double> block_end_ns;  // per block of 1024 nodes: their latest finish (a pass from v0 needs the
                                       // latest before v0 without reading every earlier node)
    std::vector<int> pack_clock;       // per pack: the clock it ran at
    std::vector<double>
        pack_offset_ns;  // per pack: its first member's start − its iteration's start (as the pass saw it)
    std::vector<double> pack_end_ns;  // per pack, split_at_landings: its members' latest finish, the same way
    // Per pack, split_at_landings: its time (s), idle-power energy and dynamic energy (J), summed
    // over its members at the clocks each ran at.
    std::vector<double> pack_time_s, pack_idle_j, pack_dynamic_j;
    // Per communication node (comm_nodes order), with comm_time_ratio: its start − its iteration's
    // start, and the clock it ran at.
    std::vector<double> comm_offset_ns;
    std::vector<int> comm_clock;
    std::vector<char> sorted;                      // scratch: per GPU, its landings are in time order
    std::vector<uint32_t> cursor;                  // scratch: per GPU, the landing after its last lookup's time
    std::vector<IterationWrite> iteration_writes;  // in node order
    int64_t nodes_computed = 0;                    // nodes the last pass into this state computed (the rest it kept)
    // Scratch of the pass.
    std::vector<double> iter_start_ns, dynamic_j;
    std::vector<char> iter_known;
  };

  // False with *err when the input is inconsistent (sizes, a table not positive).
  bool Init(PredictorInput in, std::string* err);

  Result Run(const Schedule& s);  // with the predictor's own state: not for concurrent use
  Result Run(const Schedule& s, PassState* state) const;
  // The pass for s, kept from `from` (the state of a pass for from_s) up to the first node whose
  // result can differ; the same result as Run(s). `state` may be `from` itself.
  // With end_limit_ns, the pass stops at the first node after which the run cannot end by then
  // under any schedule (its finish plus its tail: see Init), beyond rounding, and returns end_ns
  // and energy_j infinite; the state it leaves is then of no use as a `from`. The search drops
  // such schedules anyway, and a lowered clock on the critical path is seen where it starts.
  Result RunFrom(const Schedule& s, const Schedule& from_s, const PassState& from, PassState* state,
                 double end_limit_ns = std::numeric_limits<double>::infinity()) const;
  const Result& base() const { return base_; }  // the default schedule (every GPU at the default clock)
  int gpus() const { return gpus_; }
  int clocks() const { return static_cast<int>(in_.clocks_mhz.size()); }
  const std::vector<int>& clocks_mhz() const { return in_.clocks_mhz; }
  int default_clock() const { return in_.default_clock; }
  double period_ns() const { return period_ns_; }  // mean iteration length (the whole run without markers)
  int iterations() const { return static_cast<int>(marker_node_.size()); }
  // The nodes a whole pass computes: the graph's less the CPU gaps it folds into edges (see Init).
  size_t nodes_per_pass() const { return compute_.size(); }
  // The lowest clock at which some pack's energy is least: below it every pack takes longer and
  // uses more energy, so no schedule gains by going there.
  int LowestUsefulClock() const;
  // Per GPU: the factor on packs' dynamic energies fitted to the measured energy, and whether it
  // had to be clamped to [kMinEnergyScale, kMaxEnergyScale] (model and measurement disagree widely).
  const std::vector<double>& energy_scale() const { return energy_scale_; }
  const std::vector<char>& energy_scale_clamped() const { return scale_clamped_; }
  // What the pass is built from, for a reference that restates it (search/mip_reference.h): the
  // input; per iteration its marker node (kNoPred: none) and the marker's offset from the
  // iteration's start; per node its iteration (-1: before the first); per GPU the union of its
  // packs' spans at default clocks (ns).
  const PredictorInput& input() const { return in_; }
  const std::vector<uint32_t>& marker_node() const { return marker_node_; }
  const std::vector<double>& marker_offset_ns() const { return marker_offset_ns_; }
  const std::vector<int32_t>& node_iteration() const { return node_iteration_; }
  const std::vector<double>& pack_union_ns() const { return pack_union_ns_; }

 private:
  // The clock in force on gpu at offset_ns into iteration (the last landing at or before it, else
  // the schedule's last clock after iteration 0, else the default).
  int ClockAt(const Schedule& s, int gpu, int iteration, double offset_ns) const;
  // How many of gpu's landings l lie at or before offset_ns (`sorted`: l is in time order, and the
  // scan starts from where the GPU's previous lookup in this pass left st->cursor).
  size_t LandingsUpTo(const std::vector<Landing>& l, bool sorted, int gpu, double offset_ns, PassState* st) const;
  // ClockAt through LandingsUpTo (st is not used where !sorted).
  int ClockFrom(const Schedule& s, bool sorted, int gpu, int k, double offset_ns, PassState* st) const;
  // The clock in force in iteration k where i of the GPU's landings l (not empty) lie before it.
  int ClockAfter(const std::vector<Landing>& l, size_t i, int k) const;
  // split_at_landings: kernel v of pack p, started offset_ns into iteration k on gpu, through the
  // landings in its span (`sorted`: they are in time order); adds its share of the pack into st
  // where `add`, and returns its duration.
  double SplitKernel(const Schedule& s, bool sorted, uint32_t v, uint32_t p, int gpu, int k, double offset_ns, bool add,
                     PassState* st) const;
  // The pass from node v0 on, state holding every earlier node's results (end_limit_ns: see RunFrom).
  Result Pass(const Schedule& s, size_t v0, PassState* state, double end_limit_ns) const;
  // The first node whose result under s can differ from the one `from` holds for from_s.
  size_t FirstAffectedNode(const Schedule& s, const Schedule& from_s, const PassState& from) const;

  PredictorInput in_;
  int gpus_ = 0;
  double period_ns_ = 0;
  double run_start_ns_ = 0;               // the first iteration's start where it precedes the graph's origin, else 0
  std::vector<uint32_t> marker_node_;     // per iteration: its first node
  std::vector<double> marker_offset_ns_;  // marker node's observed start − the iteration's start
  std::vector<int32_t> node_iteration_;   // per node: iteration by observed start (−1 before the first)
  std::vector<uint32_t> first_member_;    // per pack
  std::vector<uint32_t> pack_order_;      // packs by first member
  std::vector<double> energy_scale_;      // per GPU
  std::vector<char> scale_clamped_;
  std::vector<double> pack_union_ns_, pack_time0_s_;  // per GPU, at default clocks
  std::vector<double> kernel_share_;                  // per node in a pack: its share of the pack (SplitKernel)
  // in_'s pack tables by clock, [clock * packs + pack]: a pass's packs mostly run at one clock,
  // so its reads go through them in order rather than one cache line per pack and clock.
  std::vector<double> time_by_clock_, energy_by_clock_;
  std::vector<char> is_marker_;  // per node: some iteration's marker
  // With comm_time_ratio: the communication nodes in node order, and per node its index there (-1:
  // not one); empty without.
  std::vector<uint32_t> comm_nodes_;
  std::vector<int32_t> comm_index_;
  // Per GPU: its nodes with no successor on the same GPU (its latest finish is among theirs).
  std::vector<std::vector<uint32_t>> rank_sinks_;
  // The pass's graph (see Init): the nodes it computes in id order, and per such node (by position)
  // its predecessors with the CPU gaps between folded into the latencies; per node, whether it is a
  // folded gap (its finish_ns is not computed).
  std::vector<uint32_t> compute_, cpred_begin_, cpred_;
  std::vector<double> cpred_latency_;
  std::vector<char> folded_;
  // Per node the pass computes: the least time from its finish to the run's end under any
  // schedule, the longest path after it with every node at its fastest clock (RunFrom's limit).
  std::vector<double> tail_ns_;
  PassState state_;  // Run(s)'s
  Result base_;
};

}  // namespace emo
