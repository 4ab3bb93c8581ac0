// workload_tp.cc — kind "tp": Megatron tensor parallelism with Domino's overlap of each chunk's
// all-reduces with the other chunk's compute (see workload.h).
#include "sim/workload_kinds.h"

#include "sim/transformer.h"

namespace emo::sim::wl {

namespace {

// Tensor parallel with Domino overlap. Chunk c uses event 2c for "compute up to the all-reduce
// done" (stream 0 → 1) and 2c+1 for "all-reduce done" (stream 1 → 0).
void EmitDominoPhase(const std::vector<const Phase*>& chunks, int32_t group, Emitter* e, std::vector<bool>* pending) {
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Phase& ph = *chunks[c];
    const int32_t ev_compute = static_cast<int32_t>(2 * c), ev_reduced = ev_compute + 1;
    if ((*pending)[c]) {
      e->Wait(0, ev_reduced);
      (*pending)[c] = false;
    }
    e->Launch(0, ph.compute);
    if (ph.allreduce_kernel >= 0) {
      e->Record(0, ev_compute);
      e->Wait(1, ev_compute);
      e->Collective(1, ph.allreduce_kernel, group, ph.allreduce_bytes);
      e->Record(1, ev_reduced);
      (*pending)[c] = true;
    }
    e->Launch(0, ph.overlap);
  }
}

}  // namespace

void BuildTp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, s.parallel.tp};
  const int64_t chunks = s.parallel.chunks, b = s.model.batch;
  std::vector<Passes> passes;
  for (int64_t i = 0; i < chunks; ++i) {
    const int64_t size = b / chunks + (i < b % chunks ? 1 : 0);
    passes.push_back(BuildPasses(c, static_cast<double>(size), s.model.layers, true, true));
  }
  if (s.parallel.tp > 1) p->groups.push_back(AllRanks(s.parallel.tp, "tp"));

  // With threads.autograd, each micro-batch's backward pass runs on the autograd thread.
  Emitter e{{}, s.launch_gap_ns};
  AutogradThread autograd{s.threads.autograd, &e, {{}, s.launch_gap_ns}};
  const double params = LocalParams(passes[0]);
  ZeroGrad(c, params, &e);
  std::vector<bool> pending(static_cast<size_t>(chunks), false);
  auto run = [&](std::vector<Phase> Passes::*pass, Emitter* on) {
    const size_t n = (passes[0].*pass).size();
    for (size_t i = 0; i < n; ++i) {
      std::vector<const Phase*> per_chunk;
      for (const Passes& ps : passes) per_chunk.push_back(&(ps.*pass)[i]);
      EmitDominoPhase(per_chunk, 0, on, &pending);
    }
  };
  for (int64_t mb = 0; mb < s.parallel.microbatches; ++mb) {
    run(&Passes::forward, &e);
    autograd.Begin();
    run(&Passes::backward, &autograd.on());
    autograd.End();
  }
  for (size_t i = 0; i < pending.size(); ++i)
    if (pending[i]) e.Wait(0, static_cast<int32_t>(2 * i + 1));
  Optimizer(c, params, &e);
  FinishStep(&e);
  RankProgram rank = OneThread(std::move(e), 2, static_cast<int32_t>(2 * chunks));
  autograd.AddTo(&rank);
  p->ranks.assign(static_cast<size_t>(s.parallel.tp), rank);
}

}  // namespace emo::sim::wl
