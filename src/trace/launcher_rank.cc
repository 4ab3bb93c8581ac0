// launcher_rank.cc — reading the launchers' rank variables.
#include "trace/launcher_rank.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string_view>

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

std::string NcclFileName(const LauncherRank& r, long pid) {
  return "emo-nccl-" + (r.rank >= 0 ? "rank" + std::to_string(r.rank) : "pid" + std::to_string(pid)) + ".txt";
}

std::string NcclFileBeside(const std::string& trace_path) {
  const size_t slash = trace_path.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const std::string_view name = std::string_view(trace_path).substr(base);
  if (!name.starts_with("emo-trace-") || !name.ends_with(".json")) return "";
  const std::string_view who = name.substr(10, name.size() - 15);  // "rank3" or "pid42"
  return trace_path.substr(0, base) + "emo-nccl-" + std::string(who) + ".txt";
}

}  // namespace emo
