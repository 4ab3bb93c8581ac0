// launcher_rank.h — a process's rank in a multi-process job, read from the variables its launcher
// sets, so that libemo_inject.so can name each process's trace file by rank (emo-trace-rank<R>.json)
// and `emo analyze DIR` can join them. Launchers and their variables, looked up in this order (the
// first one set to a non-negative integer wins, with the world size from the same launcher):
//   RANK / WORLD_SIZE                           torchrun, torch.distributed
//   OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE  Open MPI's mpirun
//   PMI_RANK / PMI_SIZE                         MPICH, Intel MPI, MVAPICH (Hydra)
//   SLURM_PROCID / SLURM_NTASKS                 srun
// SLURM_PROCID comes last because every process of a batch script inherits the batch step's 0:
// an mpirun inside sbatch sets its own rank variable, which must win.
#pragma once

#include <functional>
#include <string>

namespace emo {

struct LauncherRank {
  int rank = -1;         // -1: no launcher variable set
  int world_size = 0;    // 0: unknown
  std::string variable;  // the variable the rank came from, e.g. "RANK"
};

// `getenv` looks a variable up (null when unset); tests pass a fake environment.
LauncherRank RankFromEnvironment(const std::function<const char*(const char*)>& getenv);

// "emo-trace-rank<R>.json", or "emo-trace-pid<P>.json" for a process without a rank.
std::string TraceFileName(const LauncherRank& r, long pid);
// The NCCL profiler plugin's records of the same process (trace/nccl_records.h):
// "emo-nccl-rank<R>.txt" or "emo-nccl-pid<P>.txt".
std::string NcclFileName(const LauncherRank& r, long pid);
// The NCCL records file beside a trace file named by TraceFileName ("DIR/emo-trace-rank3.json"
// -> "DIR/emo-nccl-rank3.txt"), or "" when `trace_path` is not such a name.
std::string NcclFileBeside(const std::string& trace_path);

}  // namespace emo
