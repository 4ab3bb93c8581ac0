// workload_dp.cc — kind "dp": PyTorch DDP, gradient buckets all-reduced while the backward pass
// goes on (see workload.h).
#include "sim/workload_kinds.h"

#include "sim/transformer.h"

namespace emo::sim::wl {

// DDP: gradient buckets of about bucket_bytes, filled in backward order, each all-reduced on
// stream 1 once its last gradient is computed (event 0: stream 0 → 1; event 1: the last
// all-reduce done, stream 1 → 0). Earlier micro-batches accumulate without communication (no_sync).
void BuildDp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, 1};
  const Passes passes = BuildPasses(c, static_cast<double>(s.model.batch), s.model.layers, true, true);
  const bool reduce = s.parallel.dp > 1;
  if (reduce) p->groups.push_back(AllRanks(s.parallel.dp, "dp"));

  // The main thread runs the step; with threads.autograd, each micro-batch's backward pass runs on
  // the autograd thread, DDP's final wait for the all-reduces (the engine's end-of-backward
  // callback) included.
  Emitter e{{}, s.launch_gap_ns};
  AutogradThread autograd{s.threads.autograd, &e, {{}, s.launch_gap_ns}};
  Emitter& b = autograd.on();
  const double params = LocalParams(passes), B = static_cast<double>(s.model.dtype_bytes);
  auto forward = [&] {  // one micro-batch's forward pass
    for (const Phase& ph : passes.forward) {
      e.Launch(0, ph.compute);
      e.Launch(0, ph.overlap);
    }
  };
  if (s.step == StepKind::kEval) {  // forward passes and the loss
    for (int64_t mb = 0; mb < s.parallel.microbatches; ++mb) forward();
    FinishStep(&e);
    p->ranks.assign(static_cast<size_t>(s.parallel.dp), OneThread(std::move(e), 2, 2));
    return;
  }
  if (s.step == StepKind::kCheckpoint) {
    // torch.save on rank 0: the weights with the FP32 master weights and Adam's two moments
    // (12 bytes per parameter) copied to pageable host memory, then written; every rank then
    // meets at a barrier (a 4-byte all-reduce).
    const int32_t barrier =
        reduce ? kt.Add(AllReduceName(nm, 4, "Sum", nm.nccl), AllReduceKernel(4, static_cast<double>(s.parallel.dp), 4))
               : -1;
    std::vector<RankProgram> ranks;
    for (int64_t r = 0; r < s.parallel.dp; ++r) {
      Emitter w{{}, s.launch_gap_ns};
      if (r == 0) {
        const double bytes = params * (B + 12);
        w.Copy(0, bytes, CopyDir::kDeviceToHost);
        w.code.back().blocking = true;
        w.code.back().pinned = false;
        w.Cpu(bytes / s.write_bytes_per_s * 1e9);
      }
      if (reduce) w.Collective(1, barrier, 0, 4);
      w.StreamSync(1);
      ranks.push_back(OneThread(std::move(w), 2, 2));
    }
    p->ranks = std::move(ranks);
    return;
  }
  ZeroGrad(c, params, &e);
  double bucket = 0;
  auto flush = [&] {
    if (bucket <= 0) return;
    const int32_t k = kt.Add(AllReduceName(nm, bucket, "Sum", nm.nccl),
                             AllReduceKernel(bucket, static_cast<double>(s.parallel.dp), B));
    b.Record(0, 0);
    b.Wait(1, 0);
    b.Collective(1, k, 0, bucket);
    bucket = 0;
  };
  for (int64_t mb = 0; mb < s.parallel.microbatches; ++mb) {
    const bool sync = reduce && mb == s.parallel.microbatches - 1;
    forward();
    autograd.Begin();
    for (const Phase& ph : passes.backward)
      for (const std::vector<Step>* steps : {&ph.compute, &ph.overlap})
        for (const Step& st : *steps) {
          b.Launch(0, st.kernel);
          if (!sync || st.grad_params <= 0) continue;
          bucket += st.grad_params * B;
          if (bucket >= s.parallel.bucket_bytes) flush();
        }
    if (sync) {  // the last bucket, and stream 0 waits for the last all-reduce
      flush();
      b.Record(1, 1);
      b.Wait(0, 1);
    }
    autograd.End();
  }
  Optimizer(c, params, &e);
  FinishStep(&e);
  RankProgram rank = OneThread(std::move(e), 2, 2);
  autograd.AddTo(&rank);
  p->ranks.assign(static_cast<size_t>(s.parallel.dp), rank);
}

}  // namespace emo::sim::wl
