// workload_pp.cc — kind "pp": Megatron pipeline parallelism, the non-interleaved 1F1B schedule
// with uniform or parameter-balanced stages (see workload.h).
#include "sim/workload_kinds.h"

#include <algorithm>
#include <limits>

#include "sim/transformer.h"

namespace emo::sim::wl {

namespace {

const std::string kSendRecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t";

// NCCL point-to-point transfer of `bytes` each way it goes: read from one GPU, written on the other.
KernelTraits SendRecvKernel(double bytes) {
  KernelTraits k = MemcpyKernel(bytes);
  k.link_bytes = bytes;
  k.occupancy = 0.25;
  k.overhead_s = 10e-6;
  return k;
}

// Layers per pipeline stage. Uniform: as even as possible, earlier stages taking the remainder.
// Parameter: the contiguous split that minimises the largest stage's parameters, the first stage
// also holding the embedding and the last the final norm and output layer.
std::vector<int64_t> PartitionLayers(const Spec& s) {
  const size_t L = static_cast<size_t>(s.model.layers), P = static_cast<size_t>(s.parallel.pp);
  std::vector<int64_t> out(P, static_cast<int64_t>(L / P));
  if (!s.parallel.parameter_partition) {
    for (size_t i = 0; i < L % P; ++i) ++out[i];
    return out;
  }
  const double layer = LayerParams(s.model);
  const double embed = static_cast<double>(s.model.vocab) * static_cast<double>(s.model.hidden);
  const double head = embed + (s.model.llama ? 1 : 2) * static_cast<double>(s.model.hidden);
  auto weight = [&](size_t stage, size_t n) {
    return static_cast<double>(n) * layer + (stage == 0 ? embed : 0) + (stage == P - 1 ? head : 0);
  };
  // best[k][l]: the least largest-stage weight when stages 0..k-1 hold layers 0..l-1, the last
  // of them taking take[k][l] layers.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(P + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<size_t>> take(P + 1, std::vector<size_t>(L + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= P; ++k)
    for (size_t l = k; l <= L; ++l)
      for (size_t n = 1; n <= l - (k - 1); ++n) {
        const double w = std::max(best[k - 1][l - n], weight(k - 1, n));
        if (w < best[k][l]) best[k][l] = w, take[k][l] = n;
      }
  for (size_t k = P, l = L; k >= 1; --k) {
    out[k - 1] = static_cast<int64_t>(take[k][l]);
    l -= take[k][l];
  }
  return out;
}

}  // namespace

// Megatron's non-interleaved 1F1B schedule (schedules.py, forward_backward_pipelining_without_
// interleaving): warm-up forwards, steady one-forward-one-backward, cool-down backwards. Each p2p
// call (send, receive, or a batched send+receive with the same neighbour) is one collective of
// the pair's group; both neighbours issue them in the same order.
void BuildPp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, 1};
  const int64_t P = s.parallel.pp, M = s.parallel.microbatches;
  const std::vector<int64_t> layers = PartitionLayers(s);
  const Dims d = MakeDims(c, static_cast<double>(s.model.batch));
  const double act_bytes = d.t * d.h * d.B;
  for (int32_t i = 0; i + 1 < P; ++i) {
    Group g;
    g.ranks = {i, i + 1};
    g.kind = CollectiveKind::kSendRecv;
    g.name = "pp_" + std::to_string(i) + "_" + std::to_string(i + 1);
    p->groups.push_back(g);
  }
  const int32_t p2p = kt.Add(kSendRecv, SendRecvKernel(act_bytes));
  // Each forward and backward computation of a microbatch is a host-side range, as the training
  // loop's instruction hooks mark them (Perseus's on_instruction_begin/end, or NVTX ranges).
  p->ranges = {"forward", "backward"};
  constexpr int32_t kForward = 0, kBackward = 1;
  constexpr int32_t kPrevStream = 1, kNextStream = 2;
  for (int64_t st = 0; st < P; ++st) {
    const bool first = st == 0, last = st == P - 1;
    const Passes passes =
        BuildPasses(c, static_cast<double>(s.model.batch), layers[static_cast<size_t>(st)], first, last);
    // With threads.autograd, each backward pass runs on the autograd thread while the main thread
    // blocks in it; the schedule's p2p calls stay on the main thread.
    Emitter e{{}, s.launch_gap_ns};
    AutogradThread autograd{s.threads.autograd, &e, {{}, s.launch_gap_ns}};
    auto pass = [&](const std::vector<Phase>& phases) {
      const int32_t range = &phases == &passes.forward ? kForward : kBackward;
      e.Range(true, range);
      if (range == kBackward) autograd.Begin();
      Emitter& on = range == kBackward ? autograd.on() : e;
      for (const Phase& ph : phases) {
        on.Launch(0, ph.compute);
        on.Launch(0, ph.overlap);
      }
      if (range == kBackward) autograd.End();
      e.Range(false, range);
    };
    // One exchange with the previous (next) stage on its NCCL stream after the compute stream's
    // work so far, then torch.cuda.synchronize() as Megatron's batch_p2p_sync does (which also
    // orders the received activations or gradients before the next pass).
    auto exchange = [&](bool with_next) {
      const int32_t stream = with_next ? kNextStream : kPrevStream;
      const int32_t group = static_cast<int32_t>(with_next ? st : st - 1);
      e.Record(0, 0);
      e.Wait(stream, 0);
      e.Collective(stream, p2p, group, act_bytes);
      e.DeviceSync();
    };
    const double params = LocalParams(passes);
    ZeroGrad(c, params, &e);
    const int64_t warmup = std::min(P - st - 1, M), steady = M - warmup;
    for (int64_t i = 0; i < warmup; ++i) {
      if (!first) exchange(false);  // recv_forward
      pass(passes.forward);
      if (!last) exchange(true);  // send_forward
    }
    if (steady > 0 && !first) exchange(false);  // recv_forward
    for (int64_t i = 0; i < steady; ++i) {
      pass(passes.forward);
      if (!last) exchange(true);  // send_forward_recv_backward
      pass(passes.backward);
      if (!first) exchange(false);  // send_backward_recv_forward (send_backward on the last)
    }
    for (int64_t i = 0; i < warmup; ++i) {
      if (!last) exchange(true);  // recv_backward
      pass(passes.backward);
      if (!first) exchange(false);  // send_backward
    }
    Optimizer(c, params, &e);
    if (last) {
      FinishStep(&e);
    } else {
      e.DeviceSync();
    }
    RankProgram rank = OneThread(std::move(e), 3, 1);
    autograd.AddTo(&rank);
    p->ranks.push_back(std::move(rank));
  }
}

}  // namespace emo::sim::wl
