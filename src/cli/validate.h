// validate.h — `emo validate`: the paper's fidelity experiments on a simulated device. The
// pipeline's prediction of static clocks across the range and of random 20 ms policies, against
// the simulator's measurement of the same policies, with the pack-profiling cost.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace emo {

struct ValidateOptions {
  std::string workload;  // workload spec JSON
  std::string device;    // simulated device name; "": the workload's
  std::string profile;   // device profile JSON; "": the shipped one for the device (profiles/)
  int clocks = 10;       // static clocks, spread over the profile's range (the default always added)
  int random_policies = 5;
  double change_ms = 20;        // a random policy's clock changes every change_ms of the iteration
  double low_fraction = 0.5;    // its clocks are drawn from [low_fraction, 1] × the highest clock
  double dvfs_latency_ms = 10;  // command to effect: landings are commands + this
  double pack_ms = 5;           // packing's Δmax
  int trace_iterations = 4;     // iterations traced at default clocks
  int low_mhz = -1;             // PipelineOptions::low_mhz: -1 LowClock, 0 none
  uint64_t seed = 1;            // of the traced run and the random policies; measurements use seed+1000+i
  int seeds = 3;                // measurement seeds
  int iterations = 0;           // per measured run (the first is warm-up); 0: 8 s of measurement, at least 6
  std::string json;             // results JSON to write ("-": stdout)
};

// Runs the experiments; *out receives the JSON report (keys in validate.cc). False with *err.
bool Validate(const ValidateOptions& opt, nlohmann::ordered_json* out, std::string* err);

// The command: Validate, a text report on stdout, and the JSON where asked.
int RunValidate(const ValidateOptions& opt);

}  // namespace emo
