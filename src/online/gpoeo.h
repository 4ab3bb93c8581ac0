// gpoeo.h — GPOEO (Wang et al., TPDS 2022) as an online controller: it samples power, utilisation
// and SM clock, finds the training iteration's period by spectrum analysis (gpoeo_period.h),
// predicts from the default clock's per-period telemetry the energy and time per period at every
// SM clock (gpoeo_model.h), takes the clock that best meets the objective, refines it by a local
// search on measured per-period energy and time, then holds it and watches for a phase change
// (the period or the power drifting), which starts it over. Spec: ../shared/reference/GPOEO.md.
//
// Where EMO's GPOEO differs from upstream, and why:
// - Features are telemetry and, as the models were trained, NVML's GPM activity counters or the
//   metrics table's counters per period (gpoeo_model.h). Upstream profiles CUPTI counters inside the
//   job; online methods reach the GPU only through GpuControl, whose NVML back end has telemetry and
//   GPM (no injection into the job) and whose simulator also has the counters (Reading::kCounters).
// - All GPUs of the job share one clock, and GPOEO's signal is their summed power and mean
//   utilisation: the ranks of a tensor- or data-parallel job wait for each other, so a clock
//   chosen per GPU would be measured through the others'.
// - The local search is a pattern search over the supported clocks (a step of `step` clocks,
//   halved when neither neighbour improves) instead of upstream's outward steps, golden section
//   and cubic fit; the best measured clock wins.
// - Readings as NVML gives them: the energy counter advances every ~100 ms, the A100's power
//   reading is one 25 ms window of every 100 ms, utilisation covers 1/6 s. A probe's energy is the
//   energy counter's between two of its updates spanning about a whole number of periods (upstream:
//   sampled power × T), its period detected on the energy counters' mean power per update
//   interval (GpoeoUniformSignal; upstream: GPOEO's signal from the polled power and utilisation)
//   and refined where the readings' updates and the counters' mean power per update interval match
//   themselves (GpoeoFoldPeriod), and a probe lasts at least 4 s; the reference at the default clock likewise,
//   past the detection trace's first second.
// - An iteration under two of the readings' updates shows as its alias (10 Hz minus its frequency
//   on a 100 ms grid). The utilisation, updated on a grid of its own (1/6 s on an A100), repeats at
//   the iteration and not at its alias: where it says so at detection, the search runs on the
//   iteration (VoteOnUtilisation, GpoeoUtilisationVote). Where it cannot tell (a 1 s grid, a level
//   utilisation), a lower clock shortens the alias: a probe whose period shrank by what the clocks'
//   ratio can explain switches the search to the iteration behind the alias, and one whose period
//   then grew, which no alias can, switches it back (GpoeoShrinkLooksAliased,
//   GpoeoGrowthRefutesAlias). A probe looks only for periods its clock can produce, directly or
//   through the alias (upstream keeps [0.8, 1.5]·Tp).
//   Two probes that put a lower clock faster than a higher one are measured again, then distrusted
//   (GpoeoSearch::contradiction). Upstream has neither.
// - The memory clock (memory=1, where the GPUs list several memory clocks: GDDR parts) is tuned
//   after the SM clock, by a measured search with the SM clock held (GpoeoSearch over the memory
//   clocks, step 1). Where the models have memory models (trained on sweeps at the lower memory
//   clocks too), the pair of clocks is predicted jointly: when a lower memory clock scores best,
//   the SM clock's search runs at it and the memory search then tries its neighbours; otherwise,
//   and with models that take no memory clock, the memory search goes from the default down.
//   Upstream predicts the memory clock first, with its low band's models and f_mem/9501 in the
//   clock slot (GPOEO.md §4-5), models never trained on a memory clock.
// - Aperiodic phases keep the default clock (upstream's IPS proxy needs counters).
// - Phase changes are checked at a fixed interval, without upstream's back-off.
// - The idle watchdog (upstream: a process of its own, for its one GPU) acts per GPU and only while
//   a clock is held, so that no probe or reference measures a lowered clock; a check that ends
//   while a GPU is idle is measured again instead of starting over.
// - The held clock is measured on (guard=1, the energy objective): over the last
//   max(kGuardS, kGuardPeriods periods) of holding, the period its probe measured is refined and
//   read as a time ratio like a probe's; above the cap by over kGuardMargin, the clock goes up one
//   supported step, and the window starts over. An iteration read over 3 % away from its probe's,
//   where the clock cannot have taken it (over the cap, or sooner than the default clock runs),
//   is the job's doing (a phase change under the check's drift), and GPOEO starts over.
//   A 4 s probe reads an iteration of a few tenths of a second to about a point (1815 MHz on an
//   H100 pipeline read +4.8 % and runs +6.0 %); 20 s read it to about 0.1. Upstream has none.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "online/gpoeo_model.h"
#include "online/gpoeo_period.h"
#include "online/method_options.h"
#include "online/online_method.h"

namespace emo {

enum class GpoeoObjective { kEnergy, kEdp, kEd2p };

struct GpoeoOptions {
  GpoeoObjective objective = GpoeoObjective::kEnergy;
  double max_slowdown = 0.05;  // kEnergy: the most time per period may grow (GPOEO: 4.5 %, the issue: 5 %)
  std::string models_dir;      // "": the shipped models for the device (EMO_GPOEO_MODELS_DIR/gpoeo-sim-<device>)
  double sample_ms = 20;       // telemetry interval (GPOEO: 100 ms; finer resolves sub-second periods)
  int max_probes = 8;          // local-search probes, the predicted clock included
  int step = 3;                // the local search's first step, in supported clocks
  double probe_periods = 10;   // periods measured at each probe clock, after one to settle
  double drift = 0.15;         // phase change: the period or the mean power moved by more than this share
  double check_periods = 10;   // periods per phase-change check
  bool memory = false;         // then tune the memory clock too, where the GPUs list several (GDDR)
  int memory_probes = 3;       // memory clocks measured below the default at most
  bool guard = true;           // kEnergy: raise a held clock whose long measurement breaks the cap (notes above)
};

// Options from the command line: objective=energy|edp|ed2p, slowdown, models, sample-ms, probes,
// step, probe-periods, drift, memory=0|1, memory-probes, guard=0|1.
bool ParseGpoeoOptions(const MethodOptions& m, GpoeoOptions* out, std::string* err);

// The longest the controller takes, on a steady workload of this period, from its start to the
// held clock: detection, the reference at the default clock and max_probes probes, each at least
// 4 s and probe_periods of the period the readings show (its alias on the readings' update_s grid
// when it is under two updates) (for sizing the runs that evaluate it).
double GpoeoSearchBoundS(const GpoeoOptions& o, double period_s, double update_s = 0.1);
// The same in iterations of period_s, a tenth more (periods at lower clocks run up to 15 % longer).
int GpoeoSearchBoundIterations(const GpoeoOptions& o, double period_s);

// Two checks on the period of readings updated every update_s: period_s at the default clock,
// probe_s at a lower clock that can make the iteration at most `slowest` times longer (the clocks'
// ratio). The probe's is over 1 % shorter, which a lower clock cannot cause, and the alias of an
// iteration 1/(1/update_s − 1/period_s) long would explain it with a time ratio no greater than
// the clocks': the readings show an iteration under two updates through its alias.
bool GpoeoShrinkLooksAliased(double update_s, double period_s, double probe_s, double slowest);
// Once the readings are taken for that alias, a probe's is over 1 % longer than period_s, which the
// alias of a slower iteration cannot be, and too long to be that iteration read directly (slowed
// across two updates): the shrink that suggested the alias was the measurement's noise.
bool GpoeoGrowthRefutesAlias(double update_s, double period_s, double probe_s, double slowest);

// The local search over supported clocks (indices into an ascending list), driven by measurements:
// Next() names the clock to measure, Record() takes its energy and time relative to the default
// clock. The highest is that default itself (ratio 1/1, never measured) unless `reference_last` is
// false (a search at a lower memory clock, whose highest SM clock is not the default pair). A
// pattern search: from the predicted clock, try the neighbours `step` clocks away (in the energy
// mode, first downward when the current clock meets the slowdown cap, upward otherwise), move to
// one that improves the objective, halve the step when neither does.
class GpoeoSearch {
 public:
  GpoeoSearch(int clocks, int start, int step, int max_probes, GpoeoObjective objective, double max_slowdown,
              bool reference_last = true);
  // The clock to measure next, or -1 when the search is over.
  int Next();
  void Record(int clock, double energy_ratio, double time_ratio);
  // The best measured clock; `clocks - 1` (the default, ratio 1/1) when none beats it or the
  // measurements contradict each other (without reference_last: when none is within the cap).
  int Best() const;
  // Two probes whose times cannot both be right: the lower clock measured faster than the higher
  // one by more than 2 points (a period misread at one of them). The first time, both are measured
  // again (Next() names them); if their latest measurements, or any others, still disagree, the
  // search ends at the default clock. {-1, -1} while none.
  std::pair<int, int> contradiction() const { return contradiction_; }
  // The objective of a measurement (lower is better; infinite when it breaks the slowdown cap).
  double Score(double energy_ratio, double time_ratio) const;
  struct Probe {
    int clock;
    double energy_ratio, time_ratio;
  };
  const std::vector<Probe>& probes() const { return probes_; }

 private:
  double ScoreOf(int clock) const;
  int n_, cur_, step_, max_probes_;
  GpoeoObjective objective_;
  double max_slowdown_;
  bool reference_last_;
  std::vector<Probe> probes_;
  std::map<int, size_t> measured_;             // clock -> index into probes_
  int pending_ = -1;                           // the clock Next() handed out and not yet recorded
  std::vector<int> queue_;                     // neighbours still to try around cur_
  bool built_ = false;                         // queue_ holds cur_'s neighbours at step_
  std::pair<int, int> contradiction_{-1, -1};  // (lower clock, higher clock)
  std::vector<int> recheck_;                   // clocks to measure again, in order
  bool rechecked_ = false;                     // the one recheck was asked for
};

class Gpoeo : public OnlineMethod {
 public:
  // Loads the models and resets every GPU's clocks; error() says why when it cannot.
  Gpoeo(GpuControl* gpus, const GpoeoOptions& options);
  double PeriodMs() const override { return o_.sample_ms; }
  void Tick(double now_ns) override;
  void Finish() override;  // resets the clocks
  void Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const override;

  enum class State { kDetect, kSearch, kMemorySearch, kHold, kAperiodic };
  State state() const { return state_; }
  // The iteration's period at the default clock (behind the readings' alias when they alias it).
  double period_s() const { return period_s_ > 0 ? TruePeriod(period_s_) : 0; }
  bool aliased() const { return alias_; }
  int chosen_mhz() const { return chosen_mhz_; }        // 0 until a search has ended
  int predicted_mhz() const { return predicted_mhz_; }  // 0 until a prediction
  // The memory clock predicted with it by the memory models; 0 when none was, or it is the default.
  int predicted_memory_mhz() const { return predicted_mem_mhz_; }
  int chosen_memory_mhz() const { return chosen_mem_mhz_; }  // 0 until a memory search has ended
  struct PhaseChange {
    double at_s, old_period_s, new_period_s, old_power_w, new_power_w;
  };
  const std::vector<PhaseChange>& phase_changes() const { return phase_changes_; }
  // Simulated or wall time from the (last) start of detection to the end of the search, s.
  double settle_s() const { return settle_s_; }

 private:
  void Restart(double now_s);
  void Lock(int mhz);
  void Detect(double now_s);
  void StartProbe(int clock_index);
  void OpenProbe();  // a probe's measurement window, once its clocks are commanded
  void EndProbe(double now_s);
  void EndSearch(double now_s);
  // The memory clock's search (state kMemorySearch), with the SM clock held at chosen_mhz_.
  void StartMemoryProbe(int mem_index);
  void EndMemoryProbe(double now_s);
  void EndMemorySearch(double now_s);
  void LockMemory(int mhz);
  void Hold(double now_s);
  void Watch();  // the held clocks' measurement from their landing on (state kHold)
  void Check(double now_s);
  // The held clock's time ratio over the guard's window; raises the clock when it breaks the cap,
  // starts over when the iteration moved. True when it did either.
  bool Guard(double now_s);
  double GuardWindowS() const;
  void LockGpu(int gpu, int mhz);
  // GPOEO's idle watchdog (GPOEO.md §6), while a clock is held, per GPU: after kIdleS at 0 %
  // utilisation the lowest clock, and the held one again when work resumes. True while a GPU
  // that has worked since detection began is at the lowest (the phase-change check waits; it measures
  // afresh once work resumes). A GPU the job never uses gets the lowest clock and stops nothing.
  bool IdleWatch();
  // A GPU that has worked since detection began reads 0 % utilisation now.
  bool WorkerIdle() const;
  double Dt() const { return o_.sample_ms * 1e-3; }
  // The readings' updates since from_s as period detection takes them: the energy counters' mean
  // power per update interval where the back end offers them, else the power readings
  // (GpoeoUniformSignal).
  GpoeoUniform Signal(double from_s) const;
  // GPOEO's period detection on Signal(from_s). *update_s (when given) gets the readings' update
  // interval, the signal's sampling interval.
  GpoeoPeriod DetectPeriod(double from_s, const GpoeoPeriodOptions& po, double* update_s = nullptr) const;
  // A new measurement: the trace and the readings' updates start over.
  void ClearTrace();
  // The period refined on the readings' updates since from_s, and on the energy counters' mean
  // power between updates (on an H100 the power reading averages 1 s and hides sub-second
  // iterations; the counter still shows them), within ±rel of period_s.
  double FoldPeriod(double from_s, double period_s, double rel) const;
  // Mean summed power since from_s over a whole number of period_s, W: from the energy counters
  // between two of their updates where the back end offers them, else the sampled power.
  double MeanPower(double from_s, double period_s) const;

  // One reading of one GPU: its updates (the polls at which it changed) in the current measurement.
  struct Updates {
    GpoeoSeries s;
    double last = -1;
    bool any = false;
    void Clear();
    void DropBefore(double t_s);
    void Add(double t_s, double x);
    GpoeoSeries Since(double from_s) const;  // the updates at or after from_s
  };

  GpuControl* gpus_;
  GpoeoOptions o_;
  GpoeoModels models_;
  std::vector<int> clocks_;      // GPU 0's supported clocks, ascending
  std::vector<int> mem_clocks_;  // GPU 0's memory clocks, ascending, where the memory clock is tuned
  double limit_w_ = 0;           // summed power limit
  State state_ = State::kDetect;
  GpoeoSamples trace_;           // the current state's samples
  double trace_start_s_ = 0;     // when trace_ began
  std::vector<Updates> series_;  // per GPU: power, utilisation, memory utilisation
  std::vector<Updates> energy_;  // per GPU: the energy counter
  int ticks_ = 0;                // ticks in the current state (or probe)
  double start_s_ = 0;           // when detection (re)started
  double now_s_ = 0;
  // Detection at the default clock.
  GpoeoPeriod detected_;
  double period_s_ = 0, ref_power_w_ = 0;  // the readings' period (an alias's when alias_) and power
  double update_s_ = 0;                    // the readings' update interval
  // Set when a probe's period shrank at a lower clock (GpoeoShrinkLooksAliased): the readings show an
  // iteration shorter than two update intervals through its alias, at 1/update − 1/iteration.
  bool alias_ = false;
  // Set when a later probe refuted the alias (GpoeoGrowthRefutesAlias): the readings are read directly from
  // then on, until the search starts over.
  bool alias_refuted_ = false;
  GpoeoVote vote_;  // the utilisation's at detection
  // On the utilisation's updates since from_s (GpoeoUtilisationVote); sets vote_, and alias_ where it
  // voted.
  void VoteOnUtilisation(double from_s);
  // The shortest readings' period of the reference and the probes at clocks above `clock` (at the
  // memory clock the search runs at).
  double ShortestAbove(int clock) const;
  // The period the readings show alike with period_s: 1/(1/update − 1/period_s).
  double AliasPartner(double period_s) const;
  // The iteration's period behind a period of the readings.
  double TruePeriod(double signal_period_s) const;
  // One probe as measured: the readings' period and mean power at a clock (and memory clock, an
  // index into mem_clocks_; -1: the default).
  struct Probed {
    int clock;
    double period_s, power_w;  // 0: no period found
    int mem = -1;
  };
  std::vector<Probed> probed_;  // this search's, in order
  // A probe's energy and time relative to the default clock, through the alias when alias_;
  // infinite when no period was found or the time ratio cannot be (under 0.97, or over the
  // clocks' ratio).
  void Ratios(const Probed& p, double* e, double* t) const;
  // How many times longer the probe's clocks can make the iteration at most (the SM clocks' ratio
  // times the memory clocks').
  double Slowest(int clock, int mem = -1) const;
  // The probe just measured (since trace_start_s_) at SM clock `clock` and memory clock `mem`,
  // against the reference period ref_s (0: period_s_).
  Probed Measure(int clock, int mem, double ref_s = 0) const;
  // The first probe as Measure gives it; where detection took a whole fraction of the period its
  // best estimate took (detected_.multiple_s), measured against whichever of the two the probe's
  // readings say the iteration is (period_s_ becomes the multiple where they say so).
  Probed MeasureFirstProbe();
  bool multiple_taken_ = false;  // MeasureFirstProbe took the multiple (for the report)
  // A new search of the SM clock at search_mem_, from `start`.
  std::unique_ptr<GpoeoSearch> NewSearch(int start) const;
  // A new search from the first probe's clock, every probe so far measured again as alias_ says.
  void RecordAgain();
  std::vector<double> features_;
  std::unique_ptr<GpoeoWindows> windows_;  // where the models take activity or counter features
  std::vector<double> gpu_util_;           // per GPU, the latest utilisation reading
  std::vector<double> idle_since_s_;       // per GPU, the first of the idle readings running now; -1: busy
  std::vector<bool> idle_locked_;          // per GPU, the idle watchdog holds the lowest clock
  std::vector<bool> worked_;               // per GPU, it ran a kernel since detection (re)started
  int idle_drops_ = 0;
  int predicted_mhz_ = 0, predicted_mem_mhz_ = 0;
  double predicted_energy_ = 1, predicted_time_ = 1;
  // The memory clock (an index into mem_clocks_) the SM clock's search runs at: -1, the default;
  // else the memory models' joint prediction, and the memory search starts from it.
  int search_mem_ = -1;
  // Where the memory search starts: search_mem_, else the default memory clock.
  int MemorySearchStart() const;
  // Search.
  std::unique_ptr<GpoeoSearch> search_;
  int probe_ = -1;  // clock index being measured
  int settle_ticks_ = 0, measure_ticks_ = 0;
  std::vector<GpoeoSearch::Probe> last_probes_;
  std::pair<int, int> contradiction_{-1, -1};  // the last search's (GpoeoSearch::contradiction)
  // The memory clock's search (with the SM clock held at chosen_ci_), and its outcome.
  std::unique_ptr<GpoeoSearch> mem_search_;
  int mem_probe_ = -1;
  std::vector<Probed> mem_probed_;
  std::vector<GpoeoSearch::Probe> last_mem_probes_;
  int chosen_mem_mhz_ = 0;
  // Hold.
  int chosen_mhz_ = 0, chosen_ci_ = 0;
  double chosen_energy_ = 1, chosen_time_ = 1;  // measured, relative to the default clock
  double chosen_period_s_ = 0, chosen_power_w_ = 0;
  double settle_s_ = 0;
  double held_from_s_ = -1;  // the first reading since the readings were cleared
  // The guard: its latest measurement of the held clock (0: none yet), and its raises since the
  // search: when, from and to which clock, on what time ratio.
  double guard_time_ = 0, guard_energy_ = 0;
  struct GuardStep {
    double at_s;
    int from_mhz, to_mhz;
    double time_ratio;
  };
  std::vector<GuardStep> guard_steps_;
  std::vector<PhaseChange> phase_changes_;
  int searches_ = 0;
};

}  // namespace emo
