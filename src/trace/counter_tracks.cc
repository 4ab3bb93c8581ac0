// counter_tracks.cc — means and rates of a trace's counter tracks (counter_tracks.h).
#include "trace/counter_tracks.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace emo {

namespace {

// The samples' indices in time order (a track read from a file need not be sorted).
std::vector<size_t> TimeOrder(const CounterTrack& c) {
  std::vector<size_t> order(std::min(c.t_ns.size(), c.value.size()));
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.t_ns[a] < c.t_ns[b]; });
  return order;
}

}  // namespace

const CounterTrack* FindCounter(const RankTrace& rank, int32_t device, std::string_view name, std::string_view unit) {
  for (const CounterTrack& c : rank.counters)
    if (c.device == device && c.name == name && c.unit == unit) return &c;
  return nullptr;
}

bool CounterMean(const CounterTrack& c, int64_t a_ns, int64_t b_ns, double* mean) {
  const std::vector<size_t> order = TimeOrder(c);
  if (order.empty() || b_ns < a_ns) return false;
  // The value in force at a_ns, then each sample inside (a_ns, b_ns) takes over.
  size_t i = 0;
  while (i + 1 < order.size() && c.t_ns[order[i + 1]] <= a_ns) ++i;
  double value = c.value[order[i]], weighted = 0;
  int64_t t = a_ns;
  for (++i; i < order.size() && c.t_ns[order[i]] < b_ns; ++i) {
    weighted += value * static_cast<double>(c.t_ns[order[i]] - t);
    t = c.t_ns[order[i]];
    value = c.value[order[i]];
  }
  weighted += value * static_cast<double>(b_ns - t);
  *mean = b_ns > a_ns ? weighted / static_cast<double>(b_ns - a_ns) : value;
  return true;
}

bool CounterRate(const CounterTrack& c, int64_t a_ns, int64_t b_ns, double* per_s, double* seconds) {
  const std::vector<size_t> order = TimeOrder(c);
  const auto inside = [&](size_t i) { return c.t_ns[i] >= a_ns && c.t_ns[i] <= b_ns; };
  const auto first = std::find_if(order.begin(), order.end(), inside);
  const auto last = std::find_if(order.rbegin(), order.rend(), inside);
  if (first == order.end() || c.t_ns[*last] <= c.t_ns[*first]) return false;
  *seconds = static_cast<double>(c.t_ns[*last] - c.t_ns[*first]) * 1e-9;
  *per_s = (c.value[*last] - c.value[*first]) / *seconds;
  return true;
}

void KeepCounterSpan(CounterTrack* c, int64_t from_ns, int64_t to_ns) {
  const std::vector<size_t> order = TimeOrder(*c);
  size_t begin = 0;
  while (begin + 1 < order.size() && c->t_ns[order[begin + 1]] <= from_ns) ++begin;
  if (begin < order.size() && c->t_ns[order[begin]] > to_ns) begin = order.size();  // none before to_ns
  std::vector<int64_t> t;
  std::vector<double> v;
  for (size_t i = begin; i < order.size() && c->t_ns[order[i]] <= to_ns; ++i) {
    t.push_back(c->t_ns[order[i]]);
    v.push_back(c->value[order[i]]);
  }
  c->t_ns = std::move(t);
  c->value = std::move(v);
}

void DropCountersOfUnusedDevices(RankTrace* rank) {
  std::vector<int32_t> used;
  for (const GpuOp& o : rank->ops)
    if (std::find(used.begin(), used.end(), o.device) == used.end()) used.push_back(o.device);
  std::erase_if(rank->counters,
                [&](const CounterTrack& c) { return std::find(used.begin(), used.end(), c.device) == used.end(); });
}

}  // namespace emo
