// range_profiler.cc — CUPTI range profiling into EMO's metric vector (range_profiler.h).
#include "range_profiler.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_target.h>

namespace emo::cuda {
namespace {

// The CUPTI metrics behind EMO's metric vector: metric m is the sum of its names that the chip has
// (the tensor pipe counts mma.sync HMMA and IMMA, and Hopper's warpgroup GMMA).
struct CuptiMetric {
  Metric m;
  const char* name;
  bool optional;  // dropped where the chip lacks it
};
const CuptiMetric kCuptiMetrics[] = {
    {kSmCyclesActive, "sm__cycles_active.sum", false},
    {kWarpsPerActiveCycle, "sm__warps_active.avg.per_cycle_active", false},
    {kDramReadBytes, "dram__bytes_read.sum", false},
    {kDramWriteBytes, "dram__bytes_write.sum", false},
    {kL1Bytes, "l1tex__t_bytes.sum", false},
    {kL2Bytes, "lts__t_bytes.sum", false},
    {kInstAlu, "smsp__inst_executed_pipe_alu.sum", false},
    {kInstFma, "smsp__inst_executed_pipe_fma.sum", false},
    {kInstFp64, "smsp__inst_executed_pipe_fp64.sum", false},
    {kInstLsu, "smsp__inst_executed_pipe_lsu.sum", false},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_hmma.sum", false},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_imma.sum", true},
    {kInstTensor, "sm__inst_executed_pipe_tensor_op_gmma.sum", true},
};

}  // namespace

bool CuptiOk(CUptiResult rc, const char* what, std::string* err) {
  if (rc == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  *err = std::string("CUPTI ") + what + ": " + (text ? text : "error " + std::to_string(rc));
  return false;
}

bool RangeProfiler::Open(CUcontext ctx, int device, CUpti_ProfilerRange range, CUpti_ProfilerReplayMode replay,
                         size_t max_ranges, std::string* err) {
  Close();
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  if (!CuptiOk(cuptiProfilerInitialize(&init), "profiler initialise", err)) return false;
  initialized_ = true;
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = static_cast<size_t>(device);
  if (!CuptiOk(cuptiDeviceGetChipName(&chip), "chip name", err)) return false;
  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = ctx;
  if (!CuptiOk(cuptiProfilerGetCounterAvailability(&avail), "counter availability", err)) return false;
  availability_.assign(avail.counterAvailabilityImageSize, 0);
  avail.pCounterAvailabilityImage = availability_.data();
  if (!CuptiOk(cuptiProfilerGetCounterAvailability(&avail), "counter availability", err)) return false;
  // The metrics the chip has: required ones must all be there; optional ones are tried one by one.
  names_.clear();
  metric_of_.clear();
  for (const CuptiMetric& c : kCuptiMetrics) {
    std::vector<const char*> trial = names_;
    trial.push_back(c.name);
    std::string why;
    if (!HostWithMetrics(chip.pChipName, trial, nullptr, &why)) {
      if (c.optional) continue;
      *err = std::string("metric ") + c.name + " on " + chip.pChipName + ": " + why;
      return false;
    }
    names_.push_back(c.name);
    metric_of_.push_back(c.m);
  }
  if (!HostWithMetrics(chip.pChipName, names_, &config_, err)) return false;
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.pConfigImage = config_.data();
  passes.configImageSize = config_.size();
  if (!CuptiOk(cuptiProfilerHostGetNumOfPasses(&passes), "number of passes", err)) return false;
  passes_ = passes.numOfPasses;
  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = ctx;
  if (!CuptiOk(cuptiRangeProfilerEnable(&enable), "range profiler enable", err)) return false;
  profiler_ = enable.pRangeProfilerObject;
  max_ranges_ = max_ranges;
  CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = profiler_;
  size.pMetricNames = names_.data();
  size.numMetrics = names_.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  if (!CuptiOk(cuptiRangeProfilerGetCounterDataSize(&size), "counter data size", err)) return false;
  counter_data_.assign(size.counterDataSize, 0);
  if (!InitCounterData(err)) return false;
  CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  set.pRangeProfilerObject = profiler_;
  set.pConfig = config_.data();
  set.configSize = config_.size();
  set.pCounterDataImage = counter_data_.data();
  set.counterDataImageSize = counter_data_.size();
  set.range = range;
  set.replayMode = replay;
  set.maxRangesPerPass = max_ranges;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  return CuptiOk(cuptiRangeProfilerSetConfig(&set), "range profiler config", err);
}

bool RangeProfiler::InitCounterData(std::string* err) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params image{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  image.pRangeProfilerObject = profiler_;
  image.pCounterData = counter_data_.data();
  image.counterDataSize = counter_data_.size();
  return CuptiOk(cuptiRangeProfilerCounterDataImageInitialize(&image), "counter data image", err);
}

bool RangeProfiler::Start(std::string* err) {
  CUpti_RangeProfiler_Start_Params p{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = profiler_;
  return CuptiOk(cuptiRangeProfilerStart(&p), "range profiler start", err);
}

bool RangeProfiler::Stop(bool* all_submitted, std::string* err) {
  CUpti_RangeProfiler_Stop_Params p{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = profiler_;
  if (!CuptiOk(cuptiRangeProfilerStop(&p), "range profiler stop", err)) return false;
  *all_submitted = p.isAllPassSubmitted != 0;
  return true;
}

bool RangeProfiler::Push(const char* name, std::string* err) {
  CUpti_RangeProfiler_PushRange_Params p{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = profiler_;
  p.pRangeName = name;
  return CuptiOk(cuptiRangeProfilerPushRange(&p), "push range", err);
}

bool RangeProfiler::Pop(std::string* err) {
  CUpti_RangeProfiler_PopRange_Params p{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = profiler_;
  return CuptiOk(cuptiRangeProfilerPopRange(&p), "pop range", err);
}

bool RangeProfiler::Collect(std::vector<PackMetrics>* ranges, std::string* err) {
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = profiler_;
  if (!CuptiOk(cuptiRangeProfilerDecodeData(&decode), "decode", err)) return false;
  if (decode.numOfRangeDropped != 0) {
    *err = std::to_string(decode.numOfRangeDropped) + " ranges dropped (more than " + std::to_string(max_ranges_) +
           " in one collection)";
    return false;
  }
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = counter_data_.data();
  info.counterDataImageSize = counter_data_.size();
  if (!CuptiOk(cuptiRangeProfilerGetCounterDataInfo(&info), "counter data info", err)) return false;
  ranges->assign(info.numTotalRanges, {});
  std::vector<double> values(names_.size(), 0);
  for (size_t r = 0; r < info.numTotalRanges; ++r) {
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = host_;
    eval.pCounterDataImage = counter_data_.data();
    eval.counterDataImageSize = counter_data_.size();
    eval.ppMetricNames = names_.data();
    eval.numMetrics = names_.size();
    eval.rangeIndex = r;
    eval.pMetricValues = values.data();
    if (!CuptiOk(cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluate", err)) return false;
    for (size_t k = 0; k < names_.size(); ++k) (*ranges)[r].v[metric_of_[k]] += values[k];
    (*ranges)[r].kernels = 1;
  }
  return InitCounterData(err);
}

// A host object for `chip` holding `metrics` (kept in host_), and its config image when asked.
bool RangeProfiler::HostWithMetrics(const char* chip, const std::vector<const char*>& metrics,
                                    std::vector<uint8_t>* config, std::string* err) {
  DestroyHost();
  CUpti_Profiler_Host_Initialize_Params init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip;
  init.pCounterAvailabilityImage = availability_.data();
  if (!CuptiOk(cuptiProfilerHostInitialize(&init), "host initialise", err)) return false;
  host_ = init.pHostObject;
  if (metrics.empty()) return true;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host_;
  add.ppMetricNames = const_cast<const char**>(metrics.data());
  add.numMetrics = metrics.size();
  if (!CuptiOk(cuptiProfilerHostConfigAddMetrics(&add), "add metrics", err)) return false;
  if (!config) return true;
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host_;
  if (!CuptiOk(cuptiProfilerHostGetConfigImageSize(&size), "config image size", err)) return false;
  config->assign(size.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host_;
  image.pConfigImage = config->data();
  image.configImageSize = config->size();
  return CuptiOk(cuptiProfilerHostGetConfigImage(&image), "config image", err);
}

void RangeProfiler::DestroyHost() {
  if (!host_) return;
  CUpti_Profiler_Host_Deinitialize_Params done{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  done.pHostObject = host_;
  cuptiProfilerHostDeinitialize(&done);
  host_ = nullptr;
}

void RangeProfiler::Close() {
  if (profiler_) {
    CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    disable.pRangeProfilerObject = profiler_;
    cuptiRangeProfilerDisable(&disable);
    profiler_ = nullptr;
  }
  DestroyHost();
  if (initialized_) {
    CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&deinit);
    initialized_ = false;
  }
}

}  // namespace emo::cuda
