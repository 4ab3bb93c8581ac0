// parallel.h — runs independent pieces of work (a search's candidate passes, the seeds of a
// measurement) on several threads, each piece writing its own slot so that the result does not
// depend on the threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace emo {

// The machine's hardware threads (at least 1).
inline int HardwareThreads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// Calls f(i, worker) for every i in [0, n), on up to `threads` threads (worker < threads), and
// returns when all are done. Which thread runs which i varies; callers make the results not depend
// on it (each worker has scratch of its own, each i writes its own slot).
template <class F>
void ParallelFor(int threads, size_t n, const F& f) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) f(i, 0);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&](int worker) {
    for (size_t i = next++; i < n; i = next++) f(i, worker);
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < threads && static_cast<size_t>(w) < n; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
}

}  // namespace emo
