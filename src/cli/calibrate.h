// calibrate.h — `emo calibrate`: a device profile from the 12 microbenchmarks (model/calibrate.h).
#pragma once

#include <string>

namespace emo {

struct CalibrateCliOptions {
  std::string device = "sim:a100";  // sim:NAME (a simulated GPU) or cuda:N (a real one)
  std::string out;                  // PROFILE.json; PROFILE.json.partial holds an unfinished run
  std::string clocks = "13";        // "all", a count spread over the range, or MHz values "210,810,1410"
  uint64_t seed = 1;
  bool progress = false;  // a progress bar on stderr
  std::string command;    // the command line, for the provenance
};

int RunCalibrate(const CalibrateCliOptions& opt);

}  // namespace emo
