// adaptive_player.h — EMO's online loop, as the paper's runtime runs it: the job runs a window of
// iterations at default clocks, a planner turns what the window showed into a policy (trace, pack
// model, search), the policy is played, and the iteration time is watched. When it drifts from what
// the policy ran at (the workload changed: a new sequence length, an evaluation phase), the default
// clocks come back and a new window is planned, while the job goes on.
//
//   window   default clocks; after `settle` iterations, iterations are timed and the energy
//            counters read until the window has `window` iterations and lasts `window_s` (the
//            energy counter's resolution). Iterations that differ from the window's first by more
//            than `drift` restart it: a window must hold one phase.
//   plan     at the start of the iteration after the window's last (so that its GPU work has
//            ended), the planner gets the window and returns a policy, or says why not (the
//            default clocks stay then, until the next drift). With `background` (on hardware,
//            where a plan takes seconds: a trace of a few iterations and the search) it runs on a
//            thread of its own, so the host keeps serving its other controllers and timers; the
//            default clocks run until an iteration start finds the answer back. A check's
//            re-search (below) runs the same way.
//   playing  the policy at every iteration start. Its reference is the median of its first
//            `reference` iterations (after one that lets the clocks land). A performance guard
//            (performance_guard.h) on the window's median at default clocks and the policy's budget
//            stops it (default clocks, until the next drift) when it runs slower than allowed.
//   checks   the model can be off, so each reference is checked against the window's median, as
//            `emo optimize` checks its policies offline (NextSearchBudget): a policy slower than the
//            budget allows (beyond `tolerance`), or one that leaves more than a tenth of it unused, is
//            searched again at another budget. At most `searches` searches per plan; the slowest
//            policy within the budget is kept (a proxy for the most energy saved: an iteration is too
//            short for the energy counter), or the default clocks when none is. The guard watches
//            the kept policy; a policy under check runs only its few reference iterations.
//   drift    `streak` iterations in a row more than `drift` away from the reference (the policy's,
//            or the window's while the default clocks run): default clocks, a new window.
//   resume   a window whose first `streak` iterations all lie within `drift` of an earlier plan's
//            window (the work came back to a phase already planned for: training after an
//            evaluation) plays that plan's kept policy again, without planning or checks; its
//            guard and drift watch as before. Plans whose guard tripped are not resumed.
// At most `max_plans` plans; then the default clocks stay.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apply/controller.h"
#include "apply/performance_guard.h"
#include "device/frequency_policy.h"
#include "device/gpu_control.h"

namespace emo {

struct AdaptiveOptions {
  double budget = 0.05;  // allowed slowdown, fraction (the guard's; the planner searches with it)
  int settle = 1;        // iterations at default clocks before a window counts (clocks landing)
  int window = 4;        // at least this many iterations in a window
  // and at least this long: the model is fitted to the window's power, read from energy counters
  // that advance every ~100 ms, so each end reads up to a step late: typically 0.1 / (sqrt(6) 3) =
  // 1.4 % off over 3 s. Longer windows cost more iterations at default clocks.
  double window_s = 3;
  int reference = 5;   // iterations under a new policy whose median is its reference
  double drift = 0.1;  // relative change of the iteration time that counts as drift
  int streak = 3;      // drifting iterations in a row before the default clocks come back
  int max_plans = 8;
  int searches = 4;           // searches per plan, the first included
  double tolerance = 0.0025;  // measured slowdown allowed above the budget (iteration-time noise)
  bool background = false;    // plans on a thread of their own (see "plan" above)
};

// A window at default clocks: iterations [first, first + iterations), from start_ns to end_ns
// (host ns), each GPU's energy over it, and its iteration times.
struct PlanWindow {
  int first = 0, iterations = 0;
  double start_ns = 0, end_ns = 0;
  std::vector<double> energy_j;
  std::vector<double> iteration_ms;
};

// Plans for a window, searching at `budget`: false with *err when it cannot. Called again for the
// same window with other budgets (the checks above).
using Planner = std::function<bool(const PlanWindow& w, double budget, FrequencyPolicy* out, std::string* err)>;

// Measured checks search the budget as a bracket: the largest search budget found within the
// budget and the smallest found over it, bisected once both are known, and until then the search
// budget scaled by the measured ratio (damped upwards). `emo optimize`'s checks use it too.
struct BudgetBracket {
  double lo = -1, hi = -1;  // search budgets; -1: none yet
};
// The search budget after a policy searched at `searched` measured `measured` slowdown (within:
// no more than the budget plus the tolerance).
double NextSearchBudget(double budget, double searched, double measured, bool within, BudgetBracket* b);

class AdaptivePlayer : public Controller {
 public:
  // say(line) runs on the host's thread at every plan, drift and guard trip (lines for the user).
  AdaptivePlayer(const AdaptiveOptions& o, GpuControl* gpus, Planner plan, std::function<void(const std::string&)> say);

  void OnIterationStart(int iteration, double now_ns) override;
  void Finish() override;
  // Returns once a search in the background (AdaptiveOptions::background) is back, to be taken at
  // the next iteration start; at once when none runs.
  void WaitForSearch() const {
    if (pending_.valid()) pending_.wait();
  }

  // What happened, for reports and tests.
  struct Plan {
    PlanWindow window;
    int planned_at = 0;  // the iteration at whose start the planner was asked
    bool ok = false;     // a policy came back (else `error` says why)
    std::string error;
    double reference_ms = 0;       // the kept policy's measured iteration time (0 until known)
    std::vector<double> searched;  // budgets searched, in order
    std::vector<double> measured;  // the slowdown measured for each (against the window's median)
    int guard_tripped_at = -1;     // iteration at which the guard stopped the policy; -1: it did not
    int drift_at = -1;             // iteration at whose start drift last ended this plan; -1: it did not
    FrequencyPolicy kept;          // the policy the checks kept (when reference_ms > 0)
    std::vector<int> resumed_at;   // iterations at whose start the loop went back to it
  };
  const std::vector<Plan>& plans() const { return plans_; }
  // The plans, for --measure's JSON ("adapt").
  nlohmann::ordered_json Json() const;

 private:
  enum class State { kSettling, kWindow, kPlanning, kAwaiting, kPlaying, kHolding };
  // What the planner answered for a search at `budget`.
  struct Answer {
    bool ok = false;
    FrequencyPolicy policy;
    std::string error;
    double budget = 0;
  };
  Answer Ask(const PlanWindow& w, double budget) const;  // on this thread
  // The plan's first search (first) or a check's re-search, at once or in the background.
  void Search(double budget, bool first, int iteration, double now_ns);
  void Planned(Answer a, int iteration, double now_ns);     // the first search's answer
  void Researched(Answer a, int iteration, double now_ns);  // a re-search's
  void Keep(int iteration, double now_ns);  // the checks are over: the best policy within the budget, or none
  void StartWindow(int iteration, double now_ns);
  void Back(int iteration, double now_ns);  // default clocks, a new window after settling
  void Play(double now_ns);
  void Lock(int gpu, int mhz, double t_ns);  // at t_ns, unless the loop has left the policy by then
  void StartPolicy(FrequencyPolicy policy, int iteration, double now_ns);
  void Check(int iteration, double now_ns);  // a reference is known: keep the policy or search again
  bool ResetClocks();
  bool Drifted(double ms, double reference_ms) const;
  int Resumable() const;  // the latest plan the window matches (see "resume"), or -1
  void Resume(int plan, int iteration, double now_ns);
  std::optional<std::vector<double>> Energy() const;

  AdaptiveOptions o_;
  GpuControl* gpus_;
  Planner plan_;
  std::function<void(const std::string&)> say_;
  State state_ = State::kSettling;
  int settled_ = 0;
  double prev_start_ns_ = -1;
  PlanWindow window_;
  FrequencyPolicy policy_;
  std::optional<PerformanceGuard> guard_;
  std::vector<double> reference_;        // the policy's first iteration times
  int reference_from_ = 0;               // the first iteration whose time counts toward it
  double policy_started_ns_ = 0;         // when the policy began to play (after its plan)
  std::optional<FrequencyPolicy> best_;  // the slowest checked policy within the budget
  BudgetBracket bracket_;
  double best_ms_ = 0;
  double hold_reference_ms_ = 0;  // while the default clocks run after a plan: the window's median
  int drifting_ = 0;
  bool changed_ = false;     // clocks were set since the last reset
  uint64_t generation_ = 0;  // bumps at every reset: timers of an older policy do nothing
  std::vector<Plan> plans_;
  size_t current_ = 0;           // the plan in force: the last made, or one resumed
  std::future<Answer> pending_;  // a search in the background
  bool pending_first_ = false;
};

}  // namespace emo
