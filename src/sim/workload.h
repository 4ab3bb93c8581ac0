// workload.h — workload generators: a JSON spec (kind tp, pp, dp or offload, model sizes, parallel
// degrees) becomes a simulator Program (program.h), so that a new case needs no code.
//
// Spec (sizes in elements; shipped examples in workloads/):
//   "kind"        "tp" | "pp" | "dp" | "offload" ("replay", "phases": below)           required
//   "name"        program name; LoadWorkload defaults to the file's stem
//   "description" free text, ignored
//   "device"      a DeviceSpec name or alias (device_spec.h), e.g. "a100", "3080ti"    required
//   "model"       layers, hidden, heads, seq, batch, vocab: positive integers          required
//                   (layers at most 1000, the others at most 10⁹)
//                   batch is the micro-batch size; offload: the decode batch, seq the context
//                 kv_heads       grouped-query attention (default heads)
//                 ffn            MLP width (default 4·hidden)
//                 dtype_bytes    2 (BF16, default) or 4 (FP32)
//                 arch           "gpt" (LayerNorm, GeLU, biases; default) or
//                                "llama" (RMSNorm, rotary, SwiGLU, no biases)
//                 attention      "flash" (default) or "unfused"
//                 experts, top_k, expert_ffn, shared_experts, dense_layers: MoE (offload only;
//                                the first dense_layers layers have a dense MLP of width ffn)
//   "parallel"    tp, pp, dp     degrees (default 1; a kind uses only its own)
//                 microbatches   per iteration (default 1; pp: the 1F1B micro-batches)
//                 chunks         tp: 1 or 2 (default 2), Domino's split of the micro-batch
//                 partition      pp: "uniform" (default) or "parameter"
//                 bucket_mb      dp: gradient bucket size in MiB (default 25)
//   "link"        "nvlink" | "pcie" | bytes per second (default: the device's own link)
//   "cpu"         launch_gap_us  CPU time before every CUDA/NCCL call (default 6)
//                 gflops         offload: CPU throughput of the expert FFNs (default 1000)
//                 write_gbps     dp checkpoint: the host's write rate to storage (default 2)
//   "step"        kind dp: "train" (default), "eval" (the forward passes and the loss, no
//                 backward, no optimizer) or "checkpoint" (rank 0 copies the weights, FP32 master
//                 weights and Adam moments to pageable host memory and writes them; the other
//                 ranks wait at a barrier); with kind "phases", a job's evaluation and
//                 checkpoint stretches
//   "threads"     CPU threads beside the main one, as training jobs have them:
//                 autograd       true (kinds dp, tp and pp): each micro-batch's backward pass runs on
//                                thread 1, PyTorch's autograd engine thread, which waits for the main
//                                thread's forward pass; the main thread blocks until it ends (pp: its
//                                p2p calls stay on the main thread) (default false)
//                 poll_ms        a poller thread: one cudaStreamQuery every poll_ms, launching
//                                nothing (default 0: none)
//                 loader_ms      a data-loader thread: loader_ms of CPU work per batch, no CUDA
//                                calls (default 0: none)
//                 The poller and the loader run free of the steps (Thread::background): they
//                 repeat until the steps end, and the run ends without them; ground truth for
//                 background threads.
// Unknown fields are errors, so that a misspelt field cannot silently fall back to its default.
// Kind "replay" (LoadWorkload only) has "trace" (a trace file or directory, relative to the spec;
// replay_workload.h), "device", "name" and "description", and no other field.
// Kind "phases": a job whose work changes mid-run (a longer sequence, another batch size, an
// evaluation loop). "phases" is an array of 2 to 64 {"workload": SPEC, "iterations": N}, SPEC an
// inline spec of another kind or the path of its file (relative to this one; LoadWorkload only);
// phase k runs from the iteration where phase k-1's N ends, and the last phase has no N (it runs
// until the run ends). The phases must run on the same GPUs with the same threads per rank;
// optional "device" overrides every phase's, "name" and "description" as above.
//
// What each thread runs per iteration (stream 0 computes; every API call follows a CPU gap):
//   tp       Megatron tensor parallel, every rank the same program. The micro-batch is split in
//            two chunks (Domino): each chunk's all-reduces (after the row-parallel GEMMs in the
//            forward pass, after the column-parallel data-gradient GEMMs in the backward pass,
//            the vocabulary-parallel embedding and cross entropy) run on stream 1 while the
//            other chunk computes on stream 0, ordered by cudaEventRecord/StreamWaitEvent.
//            Weight-gradient GEMMs overlap their chunk's all-reduce. Then the optimizer, the loss
//            copied to the host, cudaStreamSynchronize.
//   pp       Megatron's non-interleaved 1F1B schedule; stage s is rank s. Every p2p exchange
//            (send, receive or both batched) is one kCollective of the adjacent pair's kSendRecv
//            group on that pair's NCCL stream (1: previous stage, 2: next stage), followed by
//            cudaDeviceSynchronize as Megatron's batch_p2p_sync does. Then the optimizer.
//   dp       DDP: forward, backward with gradient buckets all-reduced on stream 1 as each bucket
//            fills (in backward order), stream 0 waits for the last before the optimizer.
//   offload  KTransformers-style MoE decode step on one GPU: per MoE layer, attention and the
//            router on the GPU, hidden states and routing copied to the host, stream sync, the
//            shared experts launched on the GPU, the routed experts as CPU work (expert FLOPs at
//            cpu.gflops), the result copied back and added.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sim/program.h"

namespace emo::sim {

// Builds the program of `spec`. False with *err naming the offending field, e.g.
// "field model.hidden: expected a positive integer (got -1)".
bool BuildWorkload(const nlohmann::json& spec, Program* out, std::string* err);

// Reads and builds the spec in the file at `path`; errors begin with the path.
bool LoadWorkload(const std::string& path, Program* out, std::string* err);

}  // namespace emo::sim
