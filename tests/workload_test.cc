// workload_test.cc — the workload generators: every shipped spec builds and validates; small
// specs built inline have the hand-counted structure of their parallelism (GEMMs, all-reduces,
// 1F1B passes, p2p pairs, gradient buckets, offload copies); collectives cannot deadlock; bad
// specs fail naming the field; Validate() catches broken programs.
//
// Shipped specs are read from $EMO_WORKLOADS (the repository's workloads/); skipped when unset.
#include "sim/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "sim/program.h"

namespace emo::sim {
namespace {

using nlohmann::json;

Program Build(const json& spec) {
  Program p;
  std::string err;
  EXPECT_TRUE(BuildWorkload(spec, &p, &err)) << err << "\n" << spec.dump();
  return p;
}

const std::vector<Instr>& Code(const Program& p, size_t rank) { return p.ranks[rank].threads[0].code; }
const std::string& KernelName(const Program& p, const Instr& in) {
  return p.kernels[static_cast<size_t>(in.kernel)].name;
}

int CountLaunches(const Program& p, size_t rank, const std::string& substr) {
  int n = 0;
  for (const Instr& in : Code(p, rank))
    n += in.op == Op::kLaunch && KernelName(p, in).find(substr) != std::string::npos;
  return n;
}
int CountOps(const Program& p, size_t rank, Op op, int group = -1) {
  int n = 0;
  for (const Instr& in : Code(p, rank)) n += in.op == op && (group < 0 || in.group == group);
  return n;
}

// Walks the ranks' kCollective instructions in program order, each a barrier with its group's
// members: a rank passes its next collective only when every member's next collective is on the
// same group. True when every rank gets through all of its collectives.
bool CollectivesComplete(const Program& p, std::string* stuck) {
  const size_t n = p.ranks.size();
  std::vector<std::vector<int32_t>> seq(n);
  for (size_t r = 0; r < n; ++r)
    for (const Thread& th : p.ranks[r].threads)
      for (const Instr& in : th.code)
        if (in.op == Op::kCollective) seq[r].push_back(in.group);
  std::vector<size_t> pos(n, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      if (pos[r] == seq[r].size()) continue;
      const int32_t g = seq[r][pos[r]];
      bool ready = true;
      for (int32_t m : p.groups[static_cast<size_t>(g)].ranks) {
        const size_t mr = static_cast<size_t>(m);
        ready = ready && pos[mr] < seq[mr].size() && seq[mr][pos[mr]] == g;
      }
      if (!ready) continue;
      for (int32_t m : p.groups[static_cast<size_t>(g)].ranks) ++pos[static_cast<size_t>(m)];
      progress = true;
    }
  }
  for (size_t r = 0; r < n; ++r)
    if (pos[r] != seq[r].size()) {
      *stuck = "rank " + std::to_string(r) + " stuck at collective " + std::to_string(pos[r]) + " of " +
               std::to_string(seq[r].size()) + " (group " + std::to_string(seq[r][pos[r]]) + ")";
      return false;
    }
  return true;
}

bool SameInstr(const Instr& a, const Instr& b) {
  return a.op == b.op && a.stream == b.stream && a.event == b.event && a.kernel == b.kernel && a.group == b.group &&
         a.cpu_ns == b.cpu_ns && a.bytes == b.bytes && a.dir == b.dir && a.blocking == b.blocking &&
         a.pinned == b.pinned;
}

// A GPT model small enough to count by hand.
json SmallGpt() {
  return {{"arch", "gpt"}, {"layers", 2}, {"hidden", 256}, {"heads", 4}, {"seq", 128}, {"batch", 2}, {"vocab", 1024}};
}

// ---------------------------------------------------------------------------------------------

TEST(Workload, ShippedSpecsBuildAndValidate) {
  const char* dir = std::getenv("EMO_WORKLOADS");
  if (dir == nullptr) GTEST_SKIP() << "EMO_WORKLOADS is unset";
  const std::vector<std::string> expected = {"tp2-llama2-0.5b-3080ti",
                                             "tp2-gpt3-6.7b-a100",
                                             "tp4-gpt3-6.7b-a100",
                                             "tp8-gpt3-6.7b-a100",
                                             "pp2-qwen2-7b-uniform-a100",
                                             "pp4-qwen2-7b-uniform-a100",
                                             "pp8-qwen2-7b-uniform-a100",
                                             "pp2-qwen2-7b-parameter-a100",
                                             "pp4-qwen2-7b-parameter-a100",
                                             "pp8-qwen2-7b-parameter-a100",
                                             "offload-deepseek-v2-lite-a100",
                                             "dp2-gpt3-1.3b-a100"};
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.insert(entry.path().stem().string());
  for (const std::string& name : expected) EXPECT_TRUE(files.count(name)) << name << ".json missing";
  for (const std::string& name : files) {
    if (name.rfind("replay", 0) == 0) continue;  // traces re-executed: tests/sim_test.cc (SimReplay)
    SCOPED_TRACE(name);
    const std::string path = std::string(dir) + "/" + name + ".json";
    Program p;
    std::string err;
    ASSERT_TRUE(LoadWorkload(path, &p, &err)) << err;
    EXPECT_TRUE(Validate(p, &err)) << err;
    EXPECT_EQ(p.name, name);
    EXPECT_TRUE(CollectivesComplete(p, &err)) << err;
    // The rank count is the degree in the name (offload: one GPU).
    const size_t degree = name.rfind("offload", 0) == 0 ? 1 : std::stoul(name.substr(2, name.find('-') - 2));
    EXPECT_EQ(p.ranks.size(), degree);
    size_t launches = 0;
    for (const RankProgram& r : p.ranks) launches += r.threads[0].code.size();
    EXPECT_LT(p.kernels.size() * 10, launches) << "identical kernels should be shared";
  }
}

// Hand count, per rank and iteration, of a 2-layer GPT on TP-2 with the micro-batch in 2 chunks.
// GEMMs per chunk: forward 2 layers × (QKV, out-proj, MLP up, MLP down) + logits = 9; backward
// 2 × 4 linears × (data, weight gradient) + logits' 2 = 18; 27 × 2 chunks = 54.
// All-reduces per chunk: embedding 1, forward 2 per layer, cross entropy 3 (max, target logit,
// sum of exponentials), logits' input gradient 1, backward 2 per layer = 13; × 2 chunks = 26.
TEST(Workload, TensorParallelCounts) {
  for (const char* arch : {"gpt", "llama"}) {
    SCOPED_TRACE(arch);
    json model = SmallGpt();
    model["arch"] = arch;
    const Program p =
        Build({{"kind", "tp"}, {"device", "a100"}, {"link", "nvlink"}, {"model", model}, {"parallel", {{"tp", 2}}}});
    ASSERT_EQ(p.ranks.size(), 2u);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].kind, CollectiveKind::kAllReduce);
    EXPECT_EQ(p.groups[0].ranks, (std::vector<int32_t>{0, 1}));
    for (size_t r = 0; r < 2; ++r) {
      EXPECT_EQ(CountLaunches(p, r, "gemm"), 54);
      EXPECT_EQ(CountOps(p, r, Op::kCollective, 0), 26);
      EXPECT_EQ(CountLaunches(p, r, "AdamFunctor"), 1);
    }
    const std::vector<Instr>& a = Code(p, 0);
    const std::vector<Instr>& b = Code(p, 1);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(SameInstr(a[i], b[i])) << "instr " << i;
    EXPECT_EQ(a.back().op, Op::kStreamSync);
    std::string err;
    EXPECT_TRUE(CollectivesComplete(p, &err)) << err;
  }
  // One chunk: half the launches, and 4 layers reuse the 2-layer program's kernels.
  json model = SmallGpt();
  const Program one =
      Build({{"kind", "tp"}, {"device", "a100"}, {"model", model}, {"parallel", {{"tp", 2}, {"chunks", 1}}}});
  EXPECT_EQ(CountLaunches(one, 0, "gemm"), 27);
  EXPECT_EQ(CountOps(one, 0, Op::kCollective), 13);
  model["layers"] = 4;
  const Program four =
      Build({{"kind", "tp"}, {"device", "a100"}, {"model", model}, {"parallel", {{"tp", 2}, {"chunks", 1}}}});
  EXPECT_EQ(CountLaunches(four, 0, "gemm"), 27 + 2 * 12);
  EXPECT_EQ(four.kernels.size(), one.kernels.size());
}

// Domino's stream protocol: every all-reduce runs on stream 1 after waiting for an event recorded
// on stream 0, records an event that stream 0 waits for before that event is reused, and compute
// of the other chunk is launched in between.
TEST(Workload, TensorParallelDominoOverlap) {
  const Program p = Build({{"kind", "tp"},
                           {"device", "a100"},
                           {"model", SmallGpt()},
                           {"parallel", {{"tp", 2}}},
                           {"cpu", {{"launch_gap_us", 0}}}});
  const std::vector<Instr>& code = Code(p, 0);
  int collectives = 0, overlapped = 0;
  std::map<int32_t, int32_t> last_record_stream;
  for (size_t i = 0; i < code.size(); ++i) {
    const Instr& in = code[i];
    if (in.op == Op::kRecord) last_record_stream[in.event] = in.stream;
    if (in.op != Op::kCollective) continue;
    ++collectives;
    EXPECT_EQ(in.stream, 1);
    ASSERT_GE(i, 1u);
    ASSERT_EQ(code[i - 1].op, Op::kWaitEvent);
    EXPECT_EQ(code[i - 1].stream, 1);
    EXPECT_EQ(last_record_stream[code[i - 1].event], 0) << "all-reduce must wait for its GEMM";
    ASSERT_LT(i + 1, code.size());
    ASSERT_EQ(code[i + 1].op, Op::kRecord);
    EXPECT_EQ(code[i + 1].stream, 1);
    const int32_t done = code[i + 1].event;
    bool waited = false, gemm_between = false;
    for (size_t j = i + 2; j < code.size() && !waited; ++j) {
      if (code[j].op == Op::kRecord && code[j].event == done) break;
      if (code[j].op == Op::kWaitEvent && code[j].event == done) waited = code[j].stream == 0;
      if (code[j].op == Op::kLaunch && code[j].stream == 0 && KernelName(p, code[j]).find("gemm") != std::string::npos)
        gemm_between = true;
    }
    EXPECT_TRUE(waited) << "stream 0 never waits for the all-reduce at instr " << i;
    overlapped += gemm_between;
  }
  EXPECT_EQ(collectives, 26);
  EXPECT_GE(overlapped, 8 * 2) << "every layer's all-reduce should overlap the other chunk's GEMMs";
  for (const Instr& in : code)
    if (in.op == Op::kLaunch) {
      EXPECT_EQ(in.stream, 0);
    }
}

// The pass order of one pipeline stage: F for a forward pass, B for a backward pass, from the
// attention kernels (one per layer and pass).
std::string PassOrder(const Program& p, size_t rank, int layers_on_stage) {
  std::string order;
  int run = 0;
  char cur = 0;
  for (const Instr& in : Code(p, rank)) {
    if (in.op != Op::kLaunch) continue;
    const std::string& name = KernelName(p, in);
    const char c = name.rfind("void flash_fwd_kernel", 0) == 0     ? 'F'
                   : name.rfind("void flash_bwd_dq_dk_dv", 0) == 0 ? 'B'
                                                                   : 0;
    if (c == 0) continue;
    if (c != cur) run = 0;
    cur = c;
    if (++run == layers_on_stage) {
      order += c;
      run = 0;
    }
  }
  return order;
}

std::string Expected1F1B(int P, int M, int s) {
  const int warmup = std::min(P - s - 1, M);
  std::string o(static_cast<size_t>(warmup), 'F');
  for (int i = 0; i < M - warmup; ++i) o += "FB";
  return o + std::string(static_cast<size_t>(warmup), 'B');
}

// PP-4, 8 micro-batches, 8 layers (2 per stage): 8 forward and 8 backward passes per stage in
// 1F1B order; the pair (s, s+1) exchanges M + (P − s − 1) times: warm-up sends, steady batched
// send+receive, cool-down receives.
TEST(Workload, PipelineOneFOneB) {
  json model = SmallGpt();
  model["layers"] = 8;
  model["batch"] = 1;
  const int P = 4, M = 8;
  const Program p =
      Build({{"kind", "pp"}, {"device", "a100"}, {"model", model}, {"parallel", {{"pp", P}, {"microbatches", M}}}});
  ASSERT_EQ(p.ranks.size(), 4u);
  ASSERT_EQ(p.groups.size(), 3u);
  for (size_t s = 0; s < 4; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    EXPECT_EQ(CountLaunches(p, s, "void flash_fwd_kernel"), M * 2);
    EXPECT_EQ(CountLaunches(p, s, "void flash_bwd_dq_dk_dv"), M * 2);
    EXPECT_EQ(PassOrder(p, s, 2), Expected1F1B(P, M, static_cast<int>(s)));
    EXPECT_EQ(CountLaunches(p, s, "indexSelectLargeIndex"), s == 0 ? M : 0);  // embedding
    EXPECT_EQ(CountLaunches(p, s, "log_kernel_cuda"), s == 3 ? M : 0);        // loss
    for (const Instr& in : Code(p, s))
      if (in.op == Op::kCollective) {
        EXPECT_EQ(in.stream, in.group == static_cast<int32_t>(s) ? 2 : 1);
      }
  }
  for (int g = 0; g < 3; ++g) {
    const Group& grp = p.groups[static_cast<size_t>(g)];
    EXPECT_EQ(grp.kind, CollectiveKind::kSendRecv);
    ASSERT_EQ(grp.ranks, (std::vector<int32_t>{g, g + 1}));
    const int sender = CountOps(p, static_cast<size_t>(g), Op::kCollective, g);
    const int receiver = CountOps(p, static_cast<size_t>(g + 1), Op::kCollective, g);
    EXPECT_EQ(sender, receiver) << "group " << g;
    EXPECT_EQ(sender, M + (P - g - 1)) << "group " << g;
  }
  std::string err;
  EXPECT_TRUE(CollectivesComplete(p, &err)) << err;
  EXPECT_TRUE(Validate(p, &err)) << err;

  // Fewer micro-batches than stages: all forwards, then all backwards, still deadlock-free.
  const Program few =
      Build({{"kind", "pp"}, {"device", "a100"}, {"model", model}, {"parallel", {{"pp", P}, {"microbatches", 2}}}});
  for (size_t s = 0; s < 4; ++s) EXPECT_EQ(PassOrder(few, s, 2), Expected1F1B(P, 2, static_cast<int>(s)));
  EXPECT_TRUE(CollectivesComplete(few, &err)) << err;
}

// Parameter partition, 16 GPT layers of 12h² + 13h = 789 760 parameters (h = 256) and an
// embedding and output layer of 16 000 × 256 = 4 096 000 (≈ 5.2 layers) each: the best split is
// 1 / 7 / 7 / 1 (largest stage 7 layers; 2 / 6 / 6 / 2 would give 7.2).
TEST(Workload, PipelineParameterPartition) {
  json model = SmallGpt();
  model["layers"] = 16;
  model["batch"] = 1;
  model["vocab"] = 16000;
  auto stage_layers = [&](const char* partition) {
    const Program p = Build({{"kind", "pp"},
                             {"device", "a100"},
                             {"model", model},
                             {"parallel", {{"pp", 4}, {"microbatches", 4}, {"partition", partition}}}});
    std::vector<int> layers;
    for (size_t s = 0; s < p.ranks.size(); ++s) layers.push_back(CountLaunches(p, s, "void flash_fwd_kernel") / 4);
    std::string err;
    EXPECT_TRUE(CollectivesComplete(p, &err)) << err;
    return layers;
  };
  EXPECT_EQ(stage_layers("uniform"), (std::vector<int>{4, 4, 4, 4}));
  const std::vector<int> param = stage_layers("parameter");
  EXPECT_EQ(param, (std::vector<int>{1, 7, 7, 1}));
  EXPECT_LT(param.front(), param[1]);
  EXPECT_LT(param.back(), param[2]);
}

// DDP, 2-layer GPT (h = 256, vocabulary 1000, untied output layer): parameters
// 2 × (12h² + 13h) + 2 × 1000h + 2h (final norm) = 2 092 032, all-reduced once each in BF16.
TEST(Workload, DataParallelBucketsOverlapBackward) {
  json model = SmallGpt();
  model["vocab"] = 1000;
  const Program p =
      Build({{"kind", "dp"}, {"device", "a100"}, {"model", model}, {"parallel", {{"dp", 2}, {"bucket_mb", 0.5}}}});
  ASSERT_EQ(p.ranks.size(), 2u);
  const std::vector<Instr>& code = Code(p, 0);
  double bytes = 0;
  int collectives = 0, gemms_after_first = 0;
  size_t last_collective = 0, adam = 0;
  std::map<int32_t, int32_t> recorded_on;
  for (size_t i = 0; i < code.size(); ++i) {
    const Instr& in = code[i];
    if (in.op == Op::kRecord) recorded_on[in.event] = in.stream;
    if (in.op == Op::kLaunch) {
      EXPECT_EQ(in.stream, 0);
      if (collectives > 0 && KernelName(p, in).find("gemm") != std::string::npos) ++gemms_after_first;
      if (KernelName(p, in).find("AdamFunctor") != std::string::npos && adam == 0) adam = i;
    }
    if (in.op != Op::kCollective) continue;
    EXPECT_EQ(in.stream, 1);
    EXPECT_EQ(in.group, 0);
    bytes += in.bytes;
    ++collectives;
    last_collective = i;
    ASSERT_EQ(code[i - 2].op, Op::kWaitEvent);  // [gap] wait(1, e) [gap] collective
    EXPECT_EQ(code[i - 2].stream, 1);
    EXPECT_EQ(recorded_on[code[i - 2].event], 0);
  }
  EXPECT_EQ(bytes, 2092032.0 * 2);
  EXPECT_GE(collectives, 4);
  EXPECT_GT(gemms_after_first, 0) << "the first bucket should be reduced while backward goes on";
  ASSERT_GT(adam, last_collective);
  bool waits = false;
  for (size_t i = last_collective; i < adam; ++i)
    waits = waits || (code[i].op == Op::kWaitEvent && code[i].stream == 0 && recorded_on[code[i].event] == 1);
  EXPECT_TRUE(waits) << "the optimizer must wait for the last all-reduce";
  std::string err;
  EXPECT_TRUE(CollectivesComplete(p, &err)) << err;

  // One replica: nothing to reduce.
  const Program one = Build({{"kind", "dp"}, {"device", "a100"}, {"model", model}});
  EXPECT_TRUE(one.groups.empty());
  EXPECT_EQ(CountOps(one, 0, Op::kCollective), 0);
  EXPECT_EQ(CountLaunches(one, 0, "gemm"), CountLaunches(p, 0, "gemm"));
}

// Offload, 3 layers (the first dense), batch 2, top-2 of 8 experts of width 128, h = 256, CPU at
// 100 GFLOP/s: each MoE layer copies hidden states and routing to the host, synchronises, computes
// 2 × 2 × 3 × 2 × 256 × 128 / 100 = 7864.32 ns on the CPU and copies the result back.
// An evaluation step is the training step's forward passes and the loss: of the 27 GEMMs of a
// 2-layer GPT step (forward 2 x 4 linears + logits = 9, backward twice that), the 9 forward ones,
// no optimizer, no all-reduce. A checkpoint: rank 0 copies the parameters with the FP32 master
// weights and Adam's moments (2 + 12 bytes each) to pageable host memory and writes them at
// cpu.write_gbps; both ranks then meet at a barrier.
TEST(Workload, DataParallelEvalAndCheckpointSteps) {
  const json train = {{"kind", "dp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"dp", 2}}}};
  json eval = train, checkpoint = train;
  eval["step"] = "eval";
  checkpoint["step"] = "checkpoint";
  checkpoint["cpu"] = {{"write_gbps", 4}};
  const Program t = Build(train), e = Build(eval), c = Build(checkpoint);
  EXPECT_EQ(CountLaunches(t, 0, "gemm"), 27);
  EXPECT_EQ(CountLaunches(e, 0, "gemm"), 9);
  EXPECT_EQ(CountLaunches(e, 0, "Adam"), 0);
  EXPECT_GT(CountLaunches(t, 0, "Adam"), 0);
  EXPECT_EQ(CountOps(e, 0, Op::kCollective), 0);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_EQ(CountOps(c, 0, Op::kLaunch), 0);
  EXPECT_EQ(CountOps(c, 0, Op::kCollective), 1);
  EXPECT_EQ(CountOps(c, 1, Op::kCollective), 1);
  EXPECT_EQ(CountOps(c, 1, Op::kCopy), 0);
  const Instr* copy = nullptr;
  double cpu_ns = 0;
  for (const Instr& in : Code(c, 0)) {
    if (in.op == Op::kCopy) copy = &in;
    if (in.op == Op::kCpu && copy != nullptr && cpu_ns == 0) cpu_ns = in.cpu_ns;
  }
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->dir, CopyDir::kDeviceToHost);
  EXPECT_TRUE(copy->blocking);
  EXPECT_FALSE(copy->pinned);
  // 2 layers of 12·256² weights plus the 1024 x 256 embedding, about 1.8 M parameters.
  EXPECT_GT(copy->bytes, 1.5e6 * 14);
  EXPECT_LT(copy->bytes, 2.5e6 * 14);
  EXPECT_NEAR(cpu_ns, copy->bytes / 4e9 * 1e9 + 6000, 1);  // the write, then the next call's gap
  std::string err;
  EXPECT_TRUE(CollectivesComplete(c, &err)) << err;
}

TEST(Workload, OffloadCopiesSyncBeforeCpuExperts) {
  json model = SmallGpt();
  model["arch"] = "llama";
  model["layers"] = 3;
  model["seq"] = 512;
  model["experts"] = 8;
  model["top_k"] = 2;
  model["expert_ffn"] = 128;
  model["shared_experts"] = 1;
  model["dense_layers"] = 1;
  const Program p = Build(
      {{"kind", "offload"}, {"device", "a100"}, {"model", model}, {"cpu", {{"launch_gap_us", 0}, {"gflops", 100}}}});
  ASSERT_EQ(p.ranks.size(), 1u);
  EXPECT_TRUE(p.groups.empty());
  const std::vector<Instr>& code = Code(p, 0);
  int cpu = 0, h2d = 0, d2h = 0, checked = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    const Instr& in = code[i];
    if (in.op == Op::kCpu) {
      ++cpu;
      EXPECT_NEAR(in.cpu_ns, 7864.32, 1e-6);
    }
    if (in.op == Op::kCopy) (in.dir == CopyDir::kHostToDevice ? h2d : d2h)++;
    if (in.op != Op::kCopy || in.dir != CopyDir::kHostToDevice || i == 0) continue;
    // Back from the copy to the host: CPU experts, then the stream sync, then the copies out.
    size_t j = i;
    while (j > 0 && code[j - 1].op != Op::kCpu) --j;
    ASSERT_GT(j, 0u);
    size_t k = j - 1;
    while (k > 0 && code[k].op != Op::kStreamSync) {
      ASSERT_FALSE(code[k].op == Op::kCopy && code[k].dir == CopyDir::kHostToDevice);
      --k;
    }
    ASSERT_EQ(code[k].op, Op::kStreamSync);
    ASSERT_EQ(code[k - 1].op, Op::kCopy);
    EXPECT_EQ(code[k - 1].dir, CopyDir::kDeviceToHost);
    EXPECT_EQ(code[k - 2].op, Op::kCopy);
    EXPECT_EQ(code[k - 2].bytes, 2 * 256 * 2.0);  // hidden states, BF16
    ++checked;
  }
  EXPECT_EQ(cpu, 2);
  EXPECT_EQ(checked, 2);
  EXPECT_EQ(h2d, 1 + 2);      // token ids, two layers' expert outputs
  EXPECT_EQ(d2h, 2 * 2 + 1);  // hidden + routing per MoE layer, the sampled tokens
  EXPECT_EQ(code.back().op, Op::kStreamSync);
}

// Every CUDA/NCCL call follows exactly one CPU gap of launch_gap_us; communication kernels are
// named nccl* and only issued as collectives.
TEST(Workload, CpuGapsAndKernelNames) {
  json model = SmallGpt();
  model["seq"] = 512;  // 256 KiB all-reduces: NCCL's LL128 protocol on NVLink
  const Program p = Build({{"kind", "tp"},
                           {"device", "h100"},
                           {"model", model},
                           {"parallel", {{"tp", 2}}},
                           {"cpu", {{"launch_gap_us", 7.5}}}});
  const std::vector<Instr>& code = Code(p, 0);
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i].op == Op::kCpu) {
      EXPECT_EQ(code[i].cpu_ns, 7500);
      ASSERT_LT(i + 1, code.size());
      EXPECT_NE(code[i + 1].op, Op::kCpu);
    } else {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(code[i - 1].op, Op::kCpu) << "instr " << i;
    }
    if (code[i].op == Op::kCollective) {
      EXPECT_EQ(KernelName(p, code[i]).rfind("ncclKernel_AllReduce_RING_", 0), 0u);
    }
    if (code[i].op == Op::kLaunch) {
      EXPECT_NE(KernelName(p, code[i]).rfind("nccl", 0), 0u);
    }
  }
  EXPECT_GT(CountLaunches(p, 0, "sm90_xmma_gemm_bf16bf16"), 0);
  std::set<std::string> nccl;
  for (const Kernel& k : p.kernels)
    if (k.name.rfind("nccl", 0) == 0) nccl.insert(k.name);
  EXPECT_TRUE(nccl.count("ncclKernel_AllReduce_RING_LL_Max_float"));  // cross entropy's max
  EXPECT_TRUE(nccl.count("ncclKernel_AllReduce_RING_LL128_Sum_bfloat16"));
  // No kernel is stored twice.
  std::set<std::pair<std::string, std::vector<double>>> seen;
  for (const Kernel& k : p.kernels) {
    const KernelTraits& t = k.traits;
    EXPECT_TRUE(seen.insert({k.name,
                             {t.tensor_flop, t.fp32_flop, t.dram_read_bytes, t.dram_write_bytes, t.l2_bytes, t.sfu_ops,
                              t.int_ops, t.link_bytes, t.occupancy}})
                    .second)
        << k.name;
  }
  const Program pp = Build(
      {{"kind", "pp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"pp", 2}, {"microbatches", 2}}}});
  for (const Instr& in : Code(pp, 0))
    if (in.op == Op::kCollective) {
      EXPECT_EQ(KernelName(pp, in), "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t");
    }
}

TEST(Workload, BadSpecsNameTheField) {
  const json tp = {{"kind", "tp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"tp", 2}}}};
  struct Case {
    const char* what;
    json spec;
    const char* message;
  };
  std::vector<Case> cases;
  auto with = [&](const char* what, const char* message, auto edit) {
    json s = tp;
    edit(s);
    cases.push_back({what, s, message});
  };
  with("missing kind", "field kind: missing", [](json& s) { s.erase("kind"); });
  with("unknown kind", "field kind: expected one of tp, pp, dp, offload", [](json& s) { s["kind"] = "zero"; });
  with("unknown device", "field device: unknown device \"v100\"", [](json& s) { s["device"] = "v100"; });
  with("missing device", "field device: missing", [](json& s) { s.erase("device"); });
  with("tp not dividing heads", "field parallel.tp: 3 does not divide model.heads (4)",
       [](json& s) { s["parallel"]["tp"] = 3; });
  with("negative layers", "field model.layers: expected a positive integer (got -2)",
       [](json& s) { s["model"]["layers"] = -2; });
  with("hidden as a string", "field model.hidden: expected a positive integer (got \"256\")",
       [](json& s) { s["model"]["hidden"] = "256"; });
  with("missing model", "field model: missing", [](json& s) { s.erase("model"); });
  with("model not an object", "field model: expected an object", [](json& s) { s["model"] = 3; });
  with("missing seq", "field model.seq: missing", [](json& s) { s["model"].erase("seq"); });
  with("misspelt field", "field model.hiden: unknown field", [](json& s) { s["model"]["hiden"] = 1; });
  with("unknown top-level field", "field iterations: unknown field", [](json& s) { s["iterations"] = 3; });
  with("NVLink on a GeForce", "field link: RTX3080Ti has no NVLink",
       [](json& s) { s["device"] = "3080ti", s["link"] = "nvlink"; });
  with("bad link", "field link: expected", [](json& s) { s["link"] = "ethernet"; });
  with("negative launch gap", "field cpu.launch_gap_us: expected a non-negative number", [](json& s) {
    s["cpu"] = {{"launch_gap_us", -1}};
  });
  with("heads not dividing hidden", "field model.heads: 3 does not divide model.hidden",
       [](json& s) { s["model"]["heads"] = 3; });
  with("batch 1 in two chunks", "field model.batch", [](json& s) { s["model"]["batch"] = 1; });
  with("pp on kind tp", "field parallel.pp: only kind pp", [](json& s) { s["parallel"]["pp"] = 2; });
  with("more stages than layers", "field parallel.pp: 4 stages need at least as many layers", [](json& s) {
    s["kind"] = "pp", s["parallel"] = {{"pp", 4}};
  });
  with("offload without experts", "field model.experts: kind offload needs",
       [](json& s) { s["kind"] = "offload", s["parallel"] = json::object(); });
  with("top_k above experts", "field model.top_k", [](json& s) {
    s["kind"] = "offload", s["parallel"] = json::object();
    s["model"]["experts"] = 4, s["model"]["top_k"] = 5, s["model"]["expert_ffn"] = 64;
  });
  with("experts on kind tp", "field model.experts: MoE layers are supported by kind offload only",
       [](json& s) { s["model"]["experts"] = 8; });
  with("bad partition", "field parallel.partition: expected one of uniform, parameter", [](json& s) {
    s["kind"] = "pp", s["parallel"] = {{"pp", 2}, {"partition", "greedy"}};
  });
  with("huge hidden", "field model.hidden: at most 1000000000", [](json& s) { s["model"]["hidden"] = 1e12; });
  with("too many GPUs", "field parallel.tp: at most 4096 GPUs",
       [](json& s) { s["model"]["heads"] = 8192, s["model"]["hidden"] = 8192, s["parallel"]["tp"] = 8192; });
  with("too large a program", "field parallel.microbatches: model.layers × parallel.microbatches × GPUs above",
       [](json& s) { s["model"]["layers"] = 1000, s["parallel"]["microbatches"] = 1000; });
  with("dtype 3", "field model.dtype_bytes: expected 2 or 4", [](json& s) { s["model"]["dtype_bytes"] = 3; });
  with("autograd on kind offload",
       "field threads.autograd: kind offload is inference: no backward pass for the autograd thread", [](json& s) {
         s["kind"] = "offload", s["parallel"] = json::object(), s["threads"] = {{"autograd", true}};
         s["model"]["experts"] = 8, s["model"]["top_k"] = 2, s["model"]["expert_ffn"] = 128;
       });
  with("autograd not a boolean", "field threads.autograd: expected true or false (got 1)", [](json& s) {
    s["kind"] = "dp", s["parallel"] = json::object(), s["threads"] = {{"autograd", 1}};
  });
  with("negative poll period", "field threads.poll_ms: expected a non-negative number (got -100)", [](json& s) {
    s["kind"] = "dp", s["parallel"] = json::object(), s["threads"] = {{"poll_ms", -100}};
  });
  // A key holding a newline (the workload-spec fuzzer's find) is named escaped: the error stays one line.
  with("newline in a key", R"(field model."expert_f\n": unknown field)", [](json& s) { s["model"]["expert_f\n"] = 1; });
  with("misspelt thread", "field threads.loader: unknown field", [](json& s) {
    s["kind"] = "dp", s["parallel"] = json::object(), s["threads"] = {{"loader", 5}};
  });
  with("eval on kind tp", "field step: only kind dp has eval and checkpoint steps",
       [](json& s) { s["step"] = "eval"; });
  with("unknown step", "field step: expected one of train, eval, checkpoint",
       [](json& s) { s["kind"] = "dp", s["parallel"] = json::object(), s["step"] = "infer"; });
  with("autograd in an eval step", "field threads.autograd: an eval or checkpoint step has no backward pass",
       [](json& s) {
         s["kind"] = "dp", s["parallel"] = json::object(), s["step"] = "eval", s["threads"] = {{"autograd", true}};
       });
  with("negative write rate", "field cpu.write_gbps: expected a positive number", [](json& s) {
    s["kind"] = "dp", s["parallel"] = json::object(), s["step"] = "checkpoint", s["cpu"] = {{"write_gbps", -1}};
  });
  cases.push_back({"not an object", json::array(), "expected a JSON object"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Program p;
    std::string err;
    EXPECT_FALSE(BuildWorkload(c.spec, &p, &err));
    EXPECT_EQ(err.rfind(c.message, 0), 0u) << err;
  }
}

TEST(Workload, LoadErrorsNameTheFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("emo_workload_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "tp2.json").string();
  json spec = {{"kind", "tp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"tp", 2}}}};
  spec["model"]["hidden"] = -1;
  std::ofstream(bad) << spec.dump(2);
  Program p;
  std::string err;
  EXPECT_FALSE(LoadWorkload(bad, &p, &err));
  EXPECT_EQ(err, bad + ": field model.hidden: expected a positive integer (got -1)");

  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"kind\": \"tp\",";
  EXPECT_FALSE(LoadWorkload(broken, &p, &err));
  EXPECT_EQ(err.rfind(broken + ": invalid JSON at byte", 0), 0u) << err;

  EXPECT_FALSE(LoadWorkload((dir / "missing.json").string(), &p, &err));
  EXPECT_EQ(err, (dir / "missing.json").string() + ": cannot open");

  spec["model"]["hidden"] = 256;
  const std::string good = (dir / "small-tp.json").string();
  std::ofstream(good) << spec.dump(2);
  EXPECT_TRUE(LoadWorkload(good, &p, &err)) << err;
  EXPECT_EQ(p.name, "small-tp");
  std::filesystem::remove_all(dir);
}

// Every field of every kind goes through the checked reader: a field of the wrong JSON type is
// one error naming it, from LoadWorkload as from BuildWorkload, never an exception.
TEST(Workload, LoadRejectsFieldsOfTheWrongType) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("emo_workload_types_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const json tp = {{"kind", "tp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"tp", 2}}}};
  const json replay = {{"kind", "replay"}, {"device", "a100"}, {"trace", "t.json"}};
  struct Case {
    const char* what;
    json spec;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"kind as a number",
       {{"kind", 5}, {"device", "a100"}},
       "field kind: expected one of tp, pp, dp, offload, replay (got 5)"},
      {"kind as an object", {{"kind", {{"tp", 1}}}}, "field kind: expected one of"},
      {"kind null", {{"kind", nullptr}}, "field kind: expected one of"},
      {"name as an array",
       [&] {
         json s = tp;
         s["name"] = {1, 2};
         return s;
       }(),
       "field name: expected a string (got [1,2])"},
      {"replay name as an array",
       [&] {
         json s = replay;
         s["name"] = json::array();
         return s;
       }(),
       "field name: expected a string (got [])"},
      {"replay description as a number",
       [&] {
         json s = replay;
         s["description"] = 1;
         return s;
       }(),
       "field description: expected a string (got 1)"},
      {"replay device as a number",
       [&] {
         json s = replay;
         s["device"] = 100;
         return s;
       }(),
       "field device: expected a string (got 100)"},
      {"replay unknown device",
       [&] {
         json s = replay;
         s["device"] = "v100";
         return s;
       }(),
       "field device: unknown device \"v100\""},
      {"replay trace as an object",
       [&] {
         json s = replay;
         s["trace"] = json::object();
         return s;
       }(),
       "field trace: expected a string (got {})"},
      {"replay without a trace",
       [&] {
         json s = replay;
         s.erase("trace");
         return s;
       }(),
       "field trace: missing"},
      {"replay with model sizes",
       [&] {
         json s = replay;
         s["model"] = SmallGpt();
         return s;
       }(),
       "field model: unknown field"},
      {"too many layers",
       [&] {
         json s = tp;
         s["model"]["layers"] = 5000;
         return s;
       }(),
       "field model.layers: at most 1000 (got 5000)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string path = (dir / "spec.json").string();
    std::ofstream(path) << c.spec.dump();
    Program p;
    std::string err;
    EXPECT_FALSE(LoadWorkload(path, &p, &err));
    EXPECT_EQ(err.rfind(path + ": " + c.message, 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    if (c.spec.value("kind", json()) != "replay") {
      EXPECT_FALSE(BuildWorkload(c.spec, &p, &err));
      EXPECT_EQ(err.rfind(c.message, 0), 0u) << err;
    }
  }
  // A replay spec needs its file for the trace's path.
  Program p;
  std::string err;
  EXPECT_FALSE(BuildWorkload(replay, &p, &err));
  EXPECT_EQ(err.rfind("field kind: a replay spec names its trace relative to its file", 0), 0u) << err;
  std::filesystem::remove_all(dir);
}

// The deadlock walk itself: two ranks issuing two groups' collectives in opposite orders.
TEST(Workload, DeadlockWalkCatchesCrossedOrder) {
  Program p;
  p.groups = {{{0, 1}, CollectiveKind::kSendRecv, "a"}, {{0, 1}, CollectiveKind::kSendRecv, "b"}};
  p.ranks.resize(2);
  for (auto& r : p.ranks) r.threads.resize(1);
  Instr a, b;
  a.op = b.op = Op::kCollective;
  a.group = 0;
  b.group = 1;
  p.ranks[0].threads[0].code = {a, b};
  p.ranks[1].threads[0].code = {b, a};
  std::string err;
  EXPECT_FALSE(CollectivesComplete(p, &err));
  p.ranks[1].threads[0].code = {a, b};
  EXPECT_TRUE(CollectivesComplete(p, &err)) << err;
}

// ---------------------------------------------------------------------------------------------
// Validate() on hand-made programs.

Program TwoRankProgram() {
  Program p;
  p.name = "v";
  p.device = "A100-SXM4-80GB";
  p.link_bytes_per_s = 200e9;
  p.kernels = {{"gemm", GemmKernel(256, 256, 256, 2, true)},
               {"ncclKernel_AllReduce_RING_LL_Sum_bfloat16", AllReduceKernel(1e6, 2, 2)}};
  p.groups = {{{0, 1}, CollectiveKind::kAllReduce, "tp"}};
  p.ranks.resize(2);
  for (RankProgram& r : p.ranks) {
    Instr launch, record, wait, coll;
    launch.op = Op::kLaunch, launch.kernel = 0, launch.stream = 0;
    record.op = Op::kRecord, record.stream = 0, record.event = 0;
    wait.op = Op::kWaitEvent, wait.stream = 1, wait.event = 0;
    coll.op = Op::kCollective, coll.kernel = 1, coll.group = 0, coll.stream = 1, coll.bytes = 1e6;
    r.threads.resize(1);
    r.threads[0].code = {launch, record, wait, coll};
    r.streams = 2;
    r.events = 1;
  }
  return p;
}

TEST(Validate, AcceptsAndRejects) {
  std::string err;
  EXPECT_TRUE(Validate(TwoRankProgram(), &err)) << err;
  struct Case {
    const char* message;
    void (*edit)(Program*);
  };
  const Case cases[] = {
      {"program has no ranks", [](Program* p) { p->ranks.clear(); }},
      {"unknown device", [](Program* p) { p->device = "V100"; }},
      {"rank 0 thread 0 instr 0 (launch): kernel 7 out of range (2 kernels)",
       [](Program* p) { p->ranks[0].threads[0].code[0].kernel = 7; }},
      {"rank 1 thread 0 instr 0 (launch): stream 2 out of range (2 streams)",
       [](Program* p) { p->ranks[1].threads[0].code[0].stream = 2; }},
      {"rank 0 thread 0 instr 2 (wait_event): event 0 is never recorded",
       [](Program* p) { p->ranks[0].threads[0].code[1].op = Op::kCpu; }},
      {"rank 0 thread 0 instr 1 (record): event 1 out of range",
       [](Program* p) { p->ranks[0].threads[0].code[1].event = 1; }},
      {"rank 0 thread 0 instr 0 (launch): communication kernel",
       [](Program* p) { p->ranks[0].threads[0].code[0].kernel = 1; }},
      {"rank 0 thread 0 instr 3 (collective): collective kernel gemm is not an nccl* kernel",
       [](Program* p) { p->ranks[0].threads[0].code[3].kernel = 0; }},
      {"rank 1 thread 0 instr 3 (collective): rank is not a member of group 0",
       [](Program* p) { p->groups[0].ranks = {0}; }},
      {"group 0 (tp): rank 5 out of range",
       [](Program* p) {
         p->groups[0].ranks = {0, 5};
       }},
      {"group 0 (tp): a send/recv group has exactly 2 ranks",
       [](Program* p) { p->groups[0].kind = CollectiveKind::kSendRecv, p->groups[0].ranks = {0}; }},
      {"group 0 (tp): collective 0 has", [](Program* p) { p->ranks[1].threads[0].code[3].bytes = 2e6; }},
      {"kernel 0 (gemm): occupancy outside (0, 1]", [](Program* p) { p->kernels[0].traits.occupancy = 0; }},
      {"group 0 (tp): spans several GPUs but link_bytes_per_s is 0", [](Program* p) { p->link_bytes_per_s = 0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    Program p = TwoRankProgram();
    c.edit(&p);
    EXPECT_FALSE(Validate(p, &err));
    EXPECT_EQ(err.rfind(c.message, 0), 0u) << err;
  }
  // A member that never joins is the engine's to report (as a deadlock), not Validate's.
  Program p = TwoRankProgram();
  p.ranks[1].threads[0].code.pop_back();
  EXPECT_TRUE(Validate(p, &err)) << err;
}

// ---------------------------------------------------------------------------------------------
// Kind "phases": the phases' programs merged, each later phase's code behind its start.

json TwoPhases() {
  json a = {{"kind", "tp"}, {"device", "a100"}, {"model", SmallGpt()}, {"parallel", {{"tp", 2}}}};
  json b = a;
  b["model"]["layers"] = 4;
  return {{"kind", "phases"}, {"name", "grow"}, {"phases", {{{"workload", a}, {"iterations", 3}}, {{"workload", b}}}}};
}

TEST(Workload, PhasesMergeTheProgramsOfTheirPhases) {
  const json spec = TwoPhases();
  const Program a = Build(spec["phases"][0]["workload"]), b = Build(spec["phases"][1]["workload"]);
  const Program p = Build(spec);
  EXPECT_EQ(p.name, "grow");
  EXPECT_EQ(p.phase_starts, (std::vector<int32_t>{3}));
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.kernels.size(), a.kernels.size() + b.kernels.size());
  EXPECT_EQ(p.groups.size(), a.groups.size() + b.groups.size());
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ(p.ranks[r].threads.size(), a.ranks[r].threads.size());
    EXPECT_EQ(p.ranks[r].threads[0].code.size(), a.ranks[r].threads[0].code.size());
    ASSERT_EQ(p.ranks[r].threads[0].phase_code.size(), 1u);
    const std::vector<Instr>& later = p.ranks[r].threads[0].phase_code[0];
    const std::vector<Instr>& alone = b.ranks[r].threads[0].code;
    ASSERT_EQ(later.size(), alone.size());
    for (size_t i = 0; i < later.size(); ++i) {
      EXPECT_EQ(later[i].op, alone[i].op);
      if (alone[i].kernel >= 0) {
        EXPECT_EQ(later[i].kernel, alone[i].kernel + static_cast<int32_t>(a.kernels.size()));
        EXPECT_EQ(KernelName(p, later[i]), KernelName(b, alone[i]));
      }
      if (alone[i].group >= 0) {
        EXPECT_EQ(later[i].group, alone[i].group + static_cast<int32_t>(a.groups.size()));
      }
    }
  }
}

TEST(Workload, BadPhasesFailNamingTheField) {
  struct Case {
    std::string what, message;
    std::function<void(json&)> edit;
  };
  const std::vector<Case> cases = {
      {"one phase", "field phases: expected an array of 2 to 64 phases", [](json& s) { s["phases"].erase(1); }},
      {"no iterations", "field phases[0].iterations: expected an integer in 1..1000000",
       [](json& s) { s["phases"][0].erase("iterations"); }},
      {"zero iterations", "field phases[0].iterations: expected an integer in 1..1000000",
       [](json& s) { s["phases"][0]["iterations"] = 0; }},
      {"iterations on the last", "field phases[1].iterations: the last phase runs until the run ends",
       [](json& s) { s["phases"][1]["iterations"] = 5; }},
      {"other GPUs", "field phases[1]: runs on 4 GPUs, phase 0 on 2: phases of one job share its GPUs",
       [](json& s) { s["phases"][1]["workload"]["parallel"]["tp"] = 4; }},
      {"unknown field", "field phases[1].seed: unknown field of a phase (workload, iterations)",
       [](json& s) { s["phases"][1]["seed"] = 1; }},
      {"unknown top field", "field repeat: unknown field of a phases spec", [](json& s) { s["repeat"] = true; }},
      {"newline in a key", R"(field phases[1]."seed\n": unknown field of a phase)",
       [](json& s) { s["phases"][1]["seed\n"] = 1; }},
      {"newline in a top key", R"(field "repeat\n": unknown field of a phases spec)",
       [](json& s) { s["repeat\n"] = true; }},
      {"bad phase", "field phases[1].workload: field model.hidden: expected a positive integer (got -1)",
       [](json& s) { s["phases"][1]["workload"]["model"]["hidden"] = -1; }},
      {"nested", "field phases[1].workload: a phase cannot have phases of its own",
       [](json& s) { s["phases"][1]["workload"] = TwoPhases(); }},
      {"file outside a file",
       "field phases[1].workload: a phase given by its file needs a spec read from a file (LoadWorkload)",
       [](json& s) { s["phases"][1]["workload"] = "tp2.json"; }},
      {"bad device", "field device: unknown device \"v100\"", [](json& s) { s["device"] = "v100"; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json spec = TwoPhases();
    c.edit(spec);
    Program p;
    std::string err;
    EXPECT_FALSE(BuildWorkload(spec, &p, &err));
    EXPECT_EQ(err.rfind(c.message, 0), 0u) << err;
  }
}

// Phases are bounded together: two of the largest data-parallel programs (100 ranks of 1000 layers,
// each over 4 M instructions) are refused at the second.
TEST(Workload, PhasesTogetherAreBounded) {
  const json big = {
      {"kind", "dp"},
      {"device", "a100"},
      {"model", {{"layers", 1000}, {"hidden", 256}, {"heads", 4}, {"seq", 128}, {"batch", 2}, {"vocab", 1024}}},
      {"parallel", {{"dp", 100}}}};
  const json spec = {{"kind", "phases"}, {"phases", {{{"workload", big}, {"iterations", 1}}, {{"workload", big}}}}};
  Program p;
  std::string err;
  EXPECT_FALSE(BuildWorkload(spec, &p, &err));
  EXPECT_EQ(err,
            "field phases[1]: the phases up to this one hold more than 8000000 instructions; make them smaller "
            "or fewer");
}

// A phase given by its file is read relative to the phases spec; a file that is itself in phases is refused.
TEST(Workload, PhasesReadTheirFilesRelativeToTheSpec) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("emo_phases_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir / "specs");
  json spec = TwoPhases();
  std::ofstream(dir / "specs" / "b.json") << spec["phases"][1]["workload"].dump();
  spec["phases"][1]["workload"] = "specs/b.json";
  spec.erase("name");
  std::ofstream(dir / "run.json") << spec.dump();
  Program p;
  std::string err;
  ASSERT_TRUE(LoadWorkload((dir / "run.json").string(), &p, &err)) << err;
  EXPECT_EQ(p.name, "run");
  EXPECT_EQ(p.phase_starts, (std::vector<int32_t>{3}));
  std::ofstream(dir / "specs" / "b.json") << spec.dump();  // itself in phases
  EXPECT_FALSE(LoadWorkload((dir / "run.json").string(), &p, &err));
  EXPECT_NE(err.find("b.json: a phase cannot have phases of its own"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace emo::sim
