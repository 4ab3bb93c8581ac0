// counter_tracks.h — what a trace's counter tracks (trace.h: CounterTrack) say about a GPU over a
// span of the trace: the time-weighted mean of a reading (the SM clock, the power), and the mean
// rate of a cumulative counter (the energy counter, whose rise over time is the mean power).
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/trace.h"

namespace emo {

// The rank's track of `device` named name and unit, or null.
const CounterTrack* FindCounter(const RankTrace& rank, int32_t device, std::string_view name, std::string_view unit);

// The track's time-weighted mean over [a_ns, b_ns], each value held until the next sample (the one
// in force at a_ns is the last sample at or before it, else the first). False without samples or
// when b_ns < a_ns; a_ns == b_ns gives the value in force there.
bool CounterMean(const CounterTrack& c, int64_t a_ns, int64_t b_ns, double* mean);

// A cumulative counter's rise per second between its first and last samples inside [a_ns, b_ns],
// and the seconds between them. False with fewer than two samples there, or none apart in time.
bool CounterRate(const CounterTrack& c, int64_t a_ns, int64_t b_ns, double* per_s, double* seconds);

// Keeps the samples inside [from_ns, to_ns] and the last one before from_ns (the value in force as
// the span begins, at its own time), in time order.
void KeepCounterSpan(CounterTrack* c, int64_t from_ns, int64_t to_ns);

// Drops the tracks of devices none of the rank's GPU work ran on: a process may see every GPU of
// the machine, and its trace keeps those it used.
void DropCountersOfUnusedDevices(RankTrace* rank);

}  // namespace emo
