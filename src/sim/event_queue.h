// event_queue.h — the engine's pending events: a binary min-heap of 32-byte events in a flat
// array, popped in time order and, at equal times, in the order they were pushed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace emo::sim {

// A pending event (32 bytes). Events run in time order; events at the same time run in the
// order they were pushed (seq).
struct Ev {
  double t;
  uint64_t seq;
  uint64_t arg;  // the engine's: kOpDone: the stream's version when scheduled; kClockApply: the clock, MHz
  int32_t a;     // thread, stream, GPU, tick or timer index, by type
  uint8_t type;  // the engine's event type
};
static_assert(sizeof(Ev) == 32);

inline bool Earlier(double t1, uint64_t seq1, double t2, uint64_t seq2) { return t1 < t2 || (t1 == t2 && seq1 < seq2); }
inline bool Earlier(const Ev& x, const Ev& y) { return Earlier(x.t, x.seq, y.t, y.seq); }

// The event queue: a binary min-heap in a flat array. The caller numbers the events (seq): two
// events with the same time and seq come out in an unspecified order.
//
// Entries are written field by field and the fields that decide the order are read one by one:
// an Ev written in small stores and read back soon after as a whole, in 16-byte pieces, stalls
// on store forwarding, which cost more than the rest of a push or pop.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The earliest event; the queue must not be empty.
  const Ev& top() const { return heap_.front(); }
  void push(double t, uint64_t seq, uint64_t arg, int32_t a, uint8_t type) {
    size_t i = heap_.size();
    heap_.emplace_back();
    while (i > 0) {  // move the hole up to where the new event belongs
      size_t parent = (i - 1) / 2;
      if (!Earlier(t, seq, heap_[parent].t, heap_[parent].seq)) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    Ev& e = heap_[i];
    e.t = t;
    e.seq = seq;
    e.arg = arg;
    e.a = a;
    e.type = type;
  }
  // Removes the earliest event; the queue must not be empty.
  void pop() {
    const size_t n = heap_.size() - 1;  // the last entry, heap_[n], fills the hole at the root
    const double t = heap_[n].t;
    const uint64_t seq = heap_[n].seq;
    size_t i = 0;
    while (true) {  // move the hole down to where the last entry belongs
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && Earlier(heap_[child + 1], heap_[child])) ++child;
      if (!Earlier(heap_[child].t, heap_[child].seq, t, seq)) break;
      heap_[i] = heap_[child];
      i = child;
    }
    if (i != n) heap_[i] = heap_[n];
    heap_.pop_back();
  }

 private:
  std::vector<Ev> heap_;
};

}  // namespace emo::sim
