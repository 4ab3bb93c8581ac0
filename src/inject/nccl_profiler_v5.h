// nccl_profiler_v5.h — the declarations of NCCL's profiler plugin API, version 5, that
// libemo_nccl_profiler.so implements. NCCL does not install this header, so the declarations are
// copied here, field for field, from NVIDIA/nccl at tag v2.28.3-1 (commit f1308997):
// src/include/plugin/profiler/profiler_v5.h (descriptor, state arguments, the ncclProfiler_v5_t
// struct) and src/include/plugin/nccl_profiler.h (event type bits and state values).
// NCCL 2.28 looks up the symbol "ncclProfiler_v5" first (then v4 ... v1); NCCL 2.29 and later
// still load v5 plugins through an adapter. The structs cross the ABI: never reorder or retype.
// ncclResult_t and ncclDebugLogger_t are declared with the same ABI (int-sized enum, variadic
// logger) without nccl.h, so the plugin builds where NCCL is not installed.
#pragma once

#include <sys/types.h>  // pid_t

#include <cstddef>
#include <cstdint>

// NCCL's header nests anonymous structs in anonymous unions, a GNU extension GCC accepts quietly.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnested-anon-types"
#endif

namespace emo::nccl_v5 {

using Result = int;  // ncclResult_t: ncclSuccess = 0
constexpr Result kSuccess = 0;
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Event types (nccl_profiler.h): bits of the activation mask and values of EventDescr::type.
enum : uint64_t {
  kGroup = 1 << 0,          // ncclProfileGroup
  kColl = 1 << 1,           // ncclProfileColl: a collective task, with its sequence number
  kP2p = 1 << 2,            // ncclProfileP2p: a send or receive task
  kProxyOp = 1 << 3,        // ncclProfileProxyOp
  kProxyStep = 1 << 4,      // ncclProfileProxyStep
  kProxyCtrl = 1 << 5,      // ncclProfileProxyCtrl
  kKernelCh = 1 << 6,       // ncclProfileKernelCh
  kNetPlugin = 1 << 7,      // ncclProfileNetPlugin
  kGroupApi = 1 << 8,       // ncclProfileGroupApi: ncclGroupStart .. ncclGroupEnd (also implicit groups)
  kCollApi = 1 << 9,        // ncclProfileCollApi: the user's collective call
  kP2pApi = 1 << 10,        // ncclProfileP2pApi: the user's ncclSend/ncclRecv call
  kKernelLaunch = 1 << 11,  // ncclProfileKernelLaunch: around the CUDA launch of one plan's kernel
};

// ncclProfilerEventState_v5_t (values as in nccl_profiler.h); EMO records no state changes.
using EventState = int;

// ncclProfilerEventDescr_v5_t.
struct EventDescr {
  uint64_t type;    // one of the event types above
  void* parentObj;  // the parent event's handle (CollApi for Coll, GroupApi for CollApi and KernelLaunch)
  int rank;         // originating rank
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;  // per communicator and collective function
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

// ncclProfilerEventStateArgs_v5_t.
union EventStateArgs {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

// ncclProfiler_v5_t.
struct Profiler {
  const char* name;
  Result (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes, int nranks,
                 int rank, DebugLogger logfn);
  Result (*startEvent)(void* context, void** eHandle, EventDescr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, EventStateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

// Layout checks against the x86-64/aarch64 LP64 ABI NCCL is built for.
static_assert(offsetof(EventDescr, groupApi) == 24);
static_assert(offsetof(EventDescr, coll.seqNumber) == 24 && offsetof(EventDescr, coll.func) == 32);
static_assert(offsetof(EventDescr, coll.root) == 64 && offsetof(EventDescr, coll.datatype) == 72);
static_assert(offsetof(EventDescr, coll.nChannels) == 80 && offsetof(EventDescr, coll.algo) == 88);
static_assert(offsetof(EventDescr, p2p.peer) == 56 && offsetof(EventDescr, collApi.stream) == 56);
static_assert(sizeof(EventDescr) == 112 && sizeof(Profiler) == 48);

}  // namespace emo::nccl_v5

#if defined(__clang__)
#pragma clang diagnostic pop
#endif
