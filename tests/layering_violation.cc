// layering_violation.cc — a deliberate layering violation: pipeline code that calls the
// simulator. tests/layering_test.sh --violation builds it alone and expects every check to fail.
#include <string>

#include "sim/engine.h"

namespace emo {

bool ReadsTheSimulator(sim::Engine& engine, std::string* err) { return engine.Run(err); }

}  // namespace emo
