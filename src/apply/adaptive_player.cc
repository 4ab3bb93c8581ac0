// adaptive_player.cc — the window / plan / play / drift loop of adaptive_player.h.
#include "apply/adaptive_player.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "apply/policy_player.h"

namespace emo {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

double NextSearchBudget(double budget, double searched, double measured, bool within, BudgetBracket* b) {
  (within ? b->lo : b->hi) = searched;
  if (b->lo >= 0 && b->hi >= 0) return (b->lo + b->hi) / 2;
  if (within) return searched * std::min(1.5, 1 + 0.7 * (budget / std::max(measured, 0.1 * budget) - 1));
  return measured > 0 ? searched * budget / measured * 0.9 : searched;
}

AdaptivePlayer::AdaptivePlayer(const AdaptiveOptions& o, GpuControl* gpus, Planner plan,
                               std::function<void(const std::string&)> say)
    : o_(o), gpus_(gpus), plan_(std::move(plan)), say_(std::move(say)) {}

std::optional<std::vector<double>> AdaptivePlayer::Energy() const {
  std::vector<double> out;
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> e = gpus_->EnergyJ(g);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

bool AdaptivePlayer::Drifted(double ms, double reference_ms) const {
  return reference_ms > 0 && ms > 0 && std::fabs(ms / reference_ms - 1) > o_.drift;
}

int AdaptivePlayer::Resumable() const {
  if (static_cast<int>(window_.iteration_ms.size()) != o_.streak) return -1;
  for (int k = static_cast<int>(plans_.size()) - 1; k >= 0; --k) {
    const Plan& p = plans_[static_cast<size_t>(k)];
    if (p.reference_ms <= 0 || p.guard_tripped_at >= 0) continue;
    const double default_ms = Median(p.window.iteration_ms);
    bool same = true;
    for (double ms : window_.iteration_ms) same = same && !Drifted(ms, default_ms);
    if (same) return k;
  }
  return -1;
}

void AdaptivePlayer::Resume(int plan, int iteration, double now_ns) {
  Plan& p = plans_[static_cast<size_t>(plan)];
  const double default_ms = Median(p.window.iteration_ms);
  if (say_)
    say_(
        fmt::format("emo: iteration {}: iterations take {:.1f} ms at default clocks again, as in the window of "
                    "the plan made at iteration {}: its policy again",
                    iteration, window_.iteration_ms.back(), p.planned_at));
  p.resumed_at.push_back(iteration);
  current_ = static_cast<size_t>(plan);
  StartPolicy(p.kept, iteration, now_ns);
  guard_.emplace(o_.budget, default_ms);
  guard_->OnIterationStart(now_ns);
  drifting_ = 0;
}

void AdaptivePlayer::StartWindow(int iteration, double now_ns) {
  state_ = State::kWindow;
  window_ = PlanWindow();
  window_.first = iteration;
  window_.start_ns = now_ns;
  if (const auto e = Energy()) window_.energy_j = *e;
}

void AdaptivePlayer::Back(int iteration, double now_ns) {
  if (!ResetClocks()) {
    state_ = State::kHolding;  // a back end that refuses its reset gets no more commands
    hold_reference_ms_ = 0;
    return;
  }
  drifting_ = 0;
  if (o_.settle == 0) {
    StartWindow(iteration, now_ns);
    return;
  }
  state_ = State::kSettling;
  settled_ = 1;  // iteration `iteration` is the first at default clocks
}

bool AdaptivePlayer::ResetClocks() {
  ++generation_;
  if (!changed_) return true;
  changed_ = false;
  std::string err;
  if (ResetPolicyClocks(policy_, gpus_, &err)) return true;
  Fail(err);
  return false;
}

void AdaptivePlayer::Play(double now_ns) {
  // An iteration start may arrive late (a plan on the host's thread holds it for seconds): the
  // change in force by now is made at once, the later ones when due.
  const double late_ns = host()->NowNs();
  for (const auto& g : policy_.gpus) {
    const ClockChange* in_force = nullptr;
    for (const ClockChange& c : g.changes) {
      const double t_ns = now_ns + c.t_ms * 1e6;
      if (t_ns >= late_ns)
        Lock(g.gpu, c.mhz, t_ns);
      else if (!in_force || c.t_ms >= in_force->t_ms)
        in_force = &c;
    }
    if (in_force) Lock(g.gpu, in_force->mhz, late_ns);
  }
}

void AdaptivePlayer::Lock(int gpu, int mhz, double t_ns) {
  host()->At(t_ns, [this, gpu, mhz, gen = generation_](double) {
    if (gen != generation_) return;  // a policy the loop has left
    std::string err;
    changed_ = true;
    if (!gpus_->SetLockedClock(gpu, mhz, &err)) Fail(err);
  });
}

void AdaptivePlayer::StartPolicy(FrequencyPolicy policy, int iteration, double now_ns) {
  ResetClocks();  // the policy before may lock clocks this one leaves alone; its pending changes die
  policy_ = std::move(policy);
  guard_.reset();  // until the checks keep a policy
  reference_.clear();
  reference_from_ = iteration + 1;
  policy_started_ns_ = host()->NowNs();
  state_ = State::kPlaying;
  Play(now_ns);
}

void AdaptivePlayer::Check(int iteration, double now_ns) {
  Plan& p = plans_[current_];
  const double default_ms = Median(p.window.iteration_ms), ms = Median(reference_);
  const double used = ms / default_ms - 1;
  p.measured.push_back(used);
  const bool within = used <= o_.budget + o_.tolerance;
  if (within && (!best_ || ms > best_ms_)) {
    best_ = policy_;
    best_ms_ = ms;
  }
  const bool enough = within && used >= 0.9 * o_.budget;
  if (!enough && static_cast<int>(p.searched.size()) < o_.searches) {
    Search(NextSearchBudget(o_.budget, p.searched.back(), used, within, &bracket_), false, iteration, now_ns);
    return;
  }
  Keep(iteration, now_ns);
}

AdaptivePlayer::Answer AdaptivePlayer::Ask(const PlanWindow& w, double budget) const {
  Answer a;
  a.budget = budget;
  a.ok = plan_(w, budget, &a.policy, &a.error);
  return a;
}

void AdaptivePlayer::Search(double budget, bool first, int iteration, double now_ns) {
  const PlanWindow& w = first ? window_ : plans_[current_].window;
  if (!o_.background) {
    Answer a = Ask(w, budget);
    if (first) {
      Planned(std::move(a), iteration, now_ns);
    } else {
      Researched(std::move(a), iteration, now_ns);
    }
    return;
  }
  if (!first) ResetClocks();  // the policy under check has had its iterations: default clocks meanwhile
  pending_first_ = first;
  pending_ = std::async(std::launch::async, [this, w, budget] { return Ask(w, budget); });
  state_ = State::kAwaiting;
}

void AdaptivePlayer::Planned(Answer a, int iteration, double now_ns) {
  Plan& p = plans_[current_];
  p.ok = a.ok;
  p.error = a.error;
  const double default_ms = Median(p.window.iteration_ms);
  const int last = p.window.first + p.window.iterations - 1;
  if (!p.ok) {
    if (say_)
      say_(fmt::format("emo: iteration {}: no plan from iterations {}..{}: {}; default clocks", iteration,
                       p.window.first, last, p.error));
    state_ = State::kHolding;
    hold_reference_ms_ = default_ms;
    return;
  }
  size_t changes = 0;
  for (const auto& g : a.policy.gpus) changes += g.changes.size();
  if (say_)
    say_(fmt::format(
        "emo: iteration {}: planned from iterations {}..{} ({:.1f} ms each at default clocks): {} clock changes per "
        "iteration",
        iteration, p.window.first, last, default_ms, changes));
  best_.reset();
  bracket_ = BudgetBracket();
  StartPolicy(std::move(a.policy), iteration, now_ns);
}

void AdaptivePlayer::Researched(Answer a, int iteration, double now_ns) {
  Plan& p = plans_[current_];
  if (a.ok) {
    if (say_)
      say_(fmt::format(
          "emo: iteration {}: the policy searched at {:.2f} % ran {:+.2f} % (budget {:.1f} %): searching again at "
          "{:.2f} %",
          iteration, p.searched.back() * 100, p.measured.back() * 100, o_.budget * 100, a.budget * 100));
    p.searched.push_back(a.budget);
    StartPolicy(std::move(a.policy), iteration, now_ns);
    return;
  }
  if (say_)
    say_(fmt::format("emo: iteration {}: searching again at {:.2f} % failed: {}", iteration, a.budget * 100, a.error));
  Keep(iteration, now_ns);
}

void AdaptivePlayer::Keep(int iteration, double now_ns) {
  Plan& p = plans_[current_];
  const double default_ms = Median(p.window.iteration_ms);
  if (!best_) {
    if (say_)
      say_(
          fmt::format("emo: iteration {}: no policy ran within the budget ({} searched): default clocks until the "
                      "work changes",
                      iteration, p.searched.size()));
    ResetClocks();
    state_ = State::kHolding;
    hold_reference_ms_ = default_ms;
    drifting_ = 0;
    return;
  }
  if (!(policy_ == *best_)) {
    ResetClocks();
    policy_ = *best_;
  }
  state_ = State::kPlaying;  // (after a re-search in the background: from kAwaiting)
  p.reference_ms = best_ms_;
  p.kept = policy_;
  guard_.emplace(o_.budget, default_ms);
  guard_->OnIterationStart(now_ns);
  if (say_ && p.searched.size() > 1)
    say_(fmt::format("emo: iteration {}: keeping the policy that ran {:+.2f} % ({} searched)", iteration,
                     (best_ms_ / default_ms - 1) * 100, p.searched.size()));
  Play(now_ns);
}

void AdaptivePlayer::OnIterationStart(int iteration, double now_ns) {
  const double ms = prev_start_ns_ >= 0 ? (now_ns - prev_start_ns_) / 1e6 : 0;  // iteration - 1's time
  const double ms_from_ns = prev_start_ns_;
  prev_start_ns_ = now_ns;
  if (!error().empty()) return;  // the back end refused a command: hands off
  switch (state_) {
    case State::kSettling:
      if (settled_ >= o_.settle) {
        StartWindow(iteration, now_ns);
      } else {
        ++settled_;
      }
      return;

    case State::kWindow: {
      window_.iteration_ms.push_back(ms);
      if (Drifted(ms, window_.iteration_ms.front())) {  // not one phase: start again from here
        StartWindow(iteration, now_ns);
        return;
      }
      if (const int k = Resumable(); k >= 0) {
        Resume(k, iteration, now_ns);
        return;
      }
      const bool long_enough =
          static_cast<int>(window_.iteration_ms.size()) >= o_.window && now_ns - window_.start_ns >= o_.window_s * 1e9;
      if (!long_enough) return;
      window_.iterations = iteration - window_.first;
      window_.end_ns = now_ns;
      if (const auto e = Energy(); e && e->size() == window_.energy_j.size()) {
        for (size_t g = 0; g < e->size(); ++g) window_.energy_j[g] = (*e)[g] - window_.energy_j[g];
      } else {
        window_.energy_j.clear();
      }
      state_ = State::kPlanning;
      return;
    }

    case State::kPlanning: {
      if (static_cast<int>(plans_.size()) >= o_.max_plans) {
        if (say_)
          say_(fmt::format("emo: iteration {}: {} plans made, the most allowed: default clocks from here", iteration,
                           plans_.size()));
        state_ = State::kHolding;
        hold_reference_ms_ = 0;  // never drifts again
        return;
      }
      Plan p;
      p.window = window_;
      p.planned_at = iteration;
      const double budget = o_.budget > 0 ? o_.budget : o_.tolerance / 2;  // 0: as `emo optimize` does
      p.searched.push_back(budget);
      plans_.push_back(p);
      current_ = plans_.size() - 1;
      drifting_ = 0;
      Search(budget, true, iteration, now_ns);
      return;
    }

    case State::kAwaiting: {
      if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
      Answer a = pending_.get();
      if (pending_first_) {
        Planned(std::move(a), iteration, now_ns);
      } else {
        Researched(std::move(a), iteration, now_ns);
      }
      return;
    }

    case State::kPlaying: {
      Plan& p = plans_[current_];
      if (guard_) guard_->OnIterationStart(now_ns);
      if (guard_ && guard_->state() == PerformanceGuard::State::kTripped) {
        if (say_)
          say_(fmt::format(
              "emo: iteration {}: {} iterations in a row slower than {:.1f} ms (the window's {:.1f} ms at "
              "default clocks, plus the budget and {:.0f} % margin): default clocks until the work changes",
              iteration, guard_->slow_ms().size(), guard_->limit_ms(), guard_->reference_ms(), kGuardSlowMargin * 100));
        p.guard_tripped_at = iteration;
        ResetClocks();
        state_ = State::kHolding;
        hold_reference_ms_ = Median(p.window.iteration_ms);
        drifting_ = 0;
        return;
      }
      // The first iteration under a policy began under the one before: its time is left out.
      if (p.reference_ms == 0) {
        // (Nor do those that began while a plan held the host: they ran at the clocks before.)
        if (iteration - 1 >= reference_from_ && ms_from_ns >= policy_started_ns_) reference_.push_back(ms);
        if (static_cast<int>(reference_.size()) == o_.reference) {
          Check(iteration, now_ns);
          return;
        }
      } else if (Drifted(ms, p.reference_ms)) {
        if (++drifting_ >= o_.streak) {
          if (say_)
            say_(
                fmt::format("emo: iteration {}: iterations take {:.1f} ms, {:+.0f} % from the {:.1f} ms the policy "
                            "ran at: default clocks, a new window",
                            iteration, ms, (ms / p.reference_ms - 1) * 100, p.reference_ms));
          p.drift_at = iteration;
          Back(iteration, now_ns);
          return;
        }
      } else {
        drifting_ = 0;
      }
      Play(now_ns);
      return;
    }

    case State::kHolding:
      if (!Drifted(ms, hold_reference_ms_)) {
        drifting_ = 0;
      } else if (++drifting_ >= o_.streak) {
        if (say_)
          say_(fmt::format("emo: iteration {}: iterations take {:.1f} ms, {:+.0f} % from {:.1f} ms: a new window",
                           iteration, ms, (ms / hold_reference_ms_ - 1) * 100, hold_reference_ms_));
        plans_[current_].drift_at = iteration;
        Back(iteration, now_ns);
      }
      return;
  }
}

void AdaptivePlayer::Finish() {
  WaitForSearch();                                     // (the planner gives up at once when the job has ended)
  if (state_ == State::kAwaiting && pending_first_) {  // the job ended first: the plan never played
    Plan& p = plans_[current_];
    const Answer a = pending_.get();
    p.error = a.ok ? "the job ended before its plan was back" : a.error;
    if (say_)
      say_(fmt::format("emo: no plan from iterations {}..{}: {}", p.window.first,
                       p.window.first + p.window.iterations - 1, p.error));
  }
  ResetClocks();
}

nlohmann::ordered_json AdaptivePlayer::Json() const {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const Plan& p : plans_) {
    auto iteration = [](int i) { return i >= 0 ? nlohmann::ordered_json(i) : nlohmann::ordered_json(nullptr); };
    plans.push_back({{"window_first_iteration", p.window.first},
                     {"window_iterations", p.window.iterations},
                     {"planned_at_iteration", p.planned_at},
                     {"ok", p.ok},
                     {"error", p.ok ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.error)},
                     {"budgets_searched", p.searched},
                     {"slowdowns_measured", p.measured},
                     {"reference_ms", p.reference_ms},
                     {"guard_tripped_at_iteration", iteration(p.guard_tripped_at)},
                     {"drift_at_iteration", iteration(p.drift_at)},
                     {"resumed_at_iterations", p.resumed_at}});
  }
  return {{"plans", plans}};
}

}  // namespace emo
