// launcher_rank.cc — reading the launchers' rank variables.
#include "trace/launcher_rank.h"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace emo {
namespace {

// A non-negative int, or -1.
int NonNegative(const char* v) {
  if (!v || !*v) return -1;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  return *end == '\0' && errno == 0 && x >= 0 && x <= INT_MAX ? static_cast<int>(x) : -1;
}

}  // namespace

LauncherRank RankFromEnvironment(const std::function<const char*(const char*)>& getenv) {
  static const struct {
    const char* rank;
    const char* size;
  } kLaunchers[] = {{"RANK", "WORLD_SIZE"},
                    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                    {"PMI_RANK", "PMI_SIZE"},
                    {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& l : kLaunchers) {
    const int rank = NonNegative(getenv(l.rank));
    if (rank < 0) continue;
    const int size = NonNegative(getenv(l.size));
    return {rank, size > rank ? size : 0, l.rank};
  }
  return {};
}

std::string TraceFileName(const LauncherRank& r, long pid) {
  return "emo-trace-" + (r.rank >= 0 ? "rank" + std::to_string(r.rank) : "pid" + std::to_string(pid)) + ".json";
}

}  // namespace emo
