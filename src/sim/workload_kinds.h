// workload_kinds.h — one program builder per workload kind (workload_tp.cc, workload_pp.cc,
// workload_dp.cc, workload_offload.cc), each for a spec ReadSpec has accepted. Internal to the
// workload generators; the public entry points are in workload.h.
#pragma once

#include "sim/program.h"
#include "sim/transformer.h"
#include "sim/workload_spec.h"

namespace emo::sim::wl {

void BuildTp(const Spec& s, const Naming& nm, Program* p);
void BuildPp(const Spec& s, const Naming& nm, Program* p);
void BuildDp(const Spec& s, const Naming& nm, Program* p);
void BuildOffload(const Spec& s, const Naming& nm, Program* p);

}  // namespace emo::sim::wl
