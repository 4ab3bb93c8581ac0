// nccl_records.h — the records of EMO's NCCL profiler plugin (libemo_nccl_profiler.so), and how
// they annotate a traced process's NCCL kernels with their communicator and sequence number, so
// that the graph builder can join a collective across ranks by number rather than by order.
//
// File format (emo-nccl-rank<R>.txt beside emo-trace-rank<R>.json; one per process): text lines,
// fields separated by one space, '#' starts a comment line. The first line is
// "# emo-nccl-profiler 1". Then, in the order events stopped:
//   comm   COMM RANK NRANKS NNODES NAME
//   coll   ID COMM RANK GROUP TID START END SEQ FUNC COUNT DATATYPE ROOT ALGO PROTO CHANNELS
//   p2p    ID COMM RANK GROUP TID START END SEQ FUNC COUNT DATATYPE PEER
//   launch ID COMM RANK GROUP TID START END STREAM CAPTURED
// COMM is NCCL's communicator hash in 16 hex digits (equal on every rank of a communicator); RANK
// the process's rank in it; ID numbers events in the order they started (decimal, from 1); GROUP
// the ID of the ncclGroupStart/End (or NCCL's implicit group) the event belongs to, 0 unknown;
// TID the Linux thread id that started it; START/END host wall-clock ns (END -1: never stopped);
// SEQ the collective's sequence number, which NCCL keeps per communicator and collective function,
// or for a p2p the count of earlier FUNC (Send/Recv) to the same PEER on that communicator;
// FUNC, DATATYPE, ALGO, PROTO are NCCL's names ("AllReduce", "ncclFloat32", "RING", "LL");
// STREAM the launch's cudaStream_t in hex; CAPTURED 1 when it was recorded into a CUDA graph
// (the kernel runs later, from cudaGraphLaunch), else 0.
//
// Tying records to kernels. A launch record brackets the CUDA launch of one NCCL kernel on the
// thread TID. So, per thread, the k-th launch record (by ID, captured ones left out) is the k-th
// NCCL kernel whose launching call (a kernel launch, not a graph launch) ran on that thread (by
// the call's start); a thread whose counts differ is left
// unannotated, with a note. A launch carries the collectives of its GROUP and communicator: the
// j-th launch of a (GROUP, COMM) takes that pair's j-th collective (by ID), which names the
// kernel (when it aggregates several, its first). Without a collective, a launch whose pair holds
// exactly one p2p takes it, named "p2p S->R" (sender and receiver ranks) so that both ends get the
// same name; a kernel running several p2p (an all-to-all) keeps no sequence number.
//
// Written from NCCL's sources and tested with synthetic events only. What a real multi-GPU run
// has yet to confirm: that the KernelLaunch event brackets the CUDA launch that CUPTI records, on
// the same thread (so NCCL 2.28's source reads; a non-blocking communicator, which may launch from
// a helper thread, was not checked); that CUPTI records one launch call per NCCL kernel; that
// graph captures are flagged (their replays stay untied: the trace links those kernels to
// cudaGraphLaunch and NCCL emits no event for a replay); that NCCL launches no kernel outside a
// KernelLaunch event; and that the communicator hash and sequence numbers agree across ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace emo {

enum class NcclRecordKind : uint8_t { kColl = 0, kP2p = 1, kLaunch = 2 };

struct NcclRecord {
  NcclRecordKind kind = NcclRecordKind::kColl;
  uint64_t id = 0;
  uint64_t comm = 0;
  int32_t rank = -1;
  uint64_t group = 0;  // 0: unknown
  int64_t tid = 0;
  int64_t start_ns = 0;
  int64_t end_ns = -1;  // -1: never stopped
  int64_t seq = -1;     // -1 for launches
  std::string func;     // coll, p2p
  int64_t count = 0;
  std::string datatype;
  int32_t peer = -1;      // p2p: the peer; coll: the root
  uint64_t stream = 0;    // launch
  bool captured = false;  // launch: recorded into a CUDA graph
};

struct NcclComm {
  uint64_t comm = 0;
  int32_t rank = 0, nranks = 0, nnodes = 0;
  std::string name;
};

struct NcclRecords {
  std::vector<NcclComm> comms;
  std::vector<NcclRecord> records;  // in file order
};

// Reads a plugin file. Errors read "PATH:LINE: what is wrong".
bool ReadNcclRecords(const std::string& path, NcclRecords* out, std::string* err);
// The same for text held in memory; `source` names it in errors.
bool ParseNcclRecords(const std::string& source, const std::string& text, NcclRecords* out, std::string* err);

// Bytes of one element of an NCCL datatype name ("ncclFloat32" -> 4), 0 when unknown.
int64_t NcclDatatypeBytes(const std::string& datatype);

// Annotates rank `rank` of `trace` (process_group "nccl:COMM", collective, collective_seq, bytes
// when unknown) as described above. Returns how many kernels it annotated; *note is set when some
// could not be tied (which threads, and why), else left empty.
int64_t AnnotateNcclKernels(const NcclRecords& recs, Trace* trace, size_t rank, std::string* note);

}  // namespace emo
