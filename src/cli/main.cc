// main.cc — the `emo` executable: one subcommand per pipeline job.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "cli/analyze.h"

int main(int argc, char** argv) {
  CLI::App app{"EMO: energy-efficiency modeling and optimization for GPU AI workloads"};
  app.require_subcommand(1);

  emo::AnalyzeOptions analyze;
  CLI::App* a = app.add_subcommand(
      "analyze", "Build the execution graph of traces (Kineto JSON[.gz], Nsight Systems SQLite, or a directory "
                 "of them; one file per rank) and report replay fidelity, critical path, slack and asynchrony");
  a->add_option("traces", analyze.inputs, "trace files or directories")->required();
  a->add_flag("--json", analyze.json, "print one JSON object instead of text");

  CLI11_PARSE(app, argc, argv);
  if (a->parsed()) {
    analyze.progress = isatty(STDERR_FILENO) != 0;
    return emo::RunAnalyze(analyze);
  }
  return 0;
}
