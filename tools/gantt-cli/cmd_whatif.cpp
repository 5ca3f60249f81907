// gantt-cli whatif CAPTURE... --change C [--change C] -o predicted.gpuh: the capture re-timed
// as if the program had been changed (gantt/whatif/whatif.h), written as a capture of its own.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <gpuhook/capture.h>

#include "commands.h"
#include "gantt/whatif/whatif.h"
#include "gantt/scan/open.h"
#include "load_captures.h"

namespace gantt_cli {

namespace {

struct WhatifOptions {
  std::vector<std::string> inputs;
  LoadFlags load;  // --max-memory: the replay loads the captures whole
  uint64_t max_records_per_byte = gantt::whatif::kMaxRecordsPerByte;
  std::vector<std::string> changes;
  std::string output;
  double pinned_gbps = 0;
  double graph_launch_us = 0;
  std::vector<std::string> sectors_from;
  bool quiet = false;
};

std::string ms(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string pct(uint64_t now, uint64_t before) {
  if (before == 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (static_cast<double>(now) - static_cast<double>(before)) / static_cast<double>(before));
  return buf;
}

// Why the capture whatif wrote would be refused by the subcommands that read it, or "": every
// frame must decode and it must hold a Header (the reader's rules, which every subcommand
// reads through). Once it copied a Header the reader read and stats refused.
std::string refused_on_reading(const std::string& path) {
  try {
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path);
    gpuhook::CaptureReader& reader = *opened_reader;
    gpuhook::v1::Record r;
    bool header = false;
    while (reader.next(r)) header = header || (r.has_header() && r.header().format_version() != 0);
    if (reader.integrity().truncated) return "it ends inside a frame, at byte " + std::to_string(reader.integrity().truncated_at);
    if (!header) return "it has no Header record (neither had the capture it was predicted from)";
  } catch (const gpuhook::CaptureError& e) {
    return "byte " + std::to_string(e.offset()) + ": " + e.what();
  }
  return {};
}

}  // namespace

void register_whatif(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<WhatifOptions>();
  CLI::App* cmd = app.add_subcommand(
      "whatif",
      std::string("Predict the timeline of a fix from a capture, before writing the fix. The capture's operations,\n"
                  "their streams, durations and launching calls, the host's time between calls and what each\n"
                  "synchronising call waited for become a dependency graph; the changes rewrite it and a replay\n"
                  "times it again. The result is a capture (its header says predicted, from what, by which\n"
                  "changes) that render, stats, diff and export read like any other.\n"
                  "\n"
                  "Changes (--change, repeatable, applied in order):\n") +
          gantt::whatif::change_help() +
          "\n"
          "Printed: per capture, the measured span, the span the replay gives without the changes (how\n"
          "well the model fits this capture) and the predicted span. What the model cannot see, it keeps:\n"
          "data dependencies between kernels, memory contention, graph branches (kept as recorded).\n"
          "\n"
          "Examples:\n"
          "  gantt-cli whatif app.gpuh --change pin-copies --change async-copies -o pinned.gpuh\n"
          "  gantt-cli diff app.gpuh pinned.gpuh                    # what the fix would change, op by op\n"
          "  gantt-cli render app.gpuh pinned.gpuh --lanes capture -o before_after.svg\n"
          "  gantt-cli whatif app.gpuh --change streams=4 -o four.gpuh\n"
          "  gantt-cli whatif app.gpuh --change 'scale=gemm:0.8' --change remove-syncs -o faster.gpuh\n"
          "  gantt-cli whatif rank*.gpuh --change balance-ranks -o balanced.gpuh   # one section per rank\n"
          "  gantt-cli whatif stage*.gpuh --change pipeline=1f1b:16 -o 1f1b.gpuh   # GPipe as 1F1B, 16 micro-batches\n"
          "  GPUHOOK_SECTORS=1 GPUHOOK_OUTPUT=counts.gpuh LD_PRELOAD=libgpuhook.so ./app   # a second run, counting\n"
          "  gantt-cli whatif app.gpuh --change coalesce=gather --sectors-from counts.gpuh -o coalesced.gpuh\n"
          "\n"
          "Exit: 0 written; 2 an unreadable capture, a change it cannot make, an existing output.\n");
  cmd->add_option("inputs", opts->inputs, "captures (several: the ranks of one job, or a merged capture)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-c,--change", opts->changes, "a change (see above); repeatable")->required();
  cmd->add_option("-o,--output", opts->output, "the predicted capture to create (never overwritten)")->required();
  cmd->add_option("--pinned-gbps", opts->pinned_gbps,
                  "pin-copies: host<->device bandwidth of pinned memory in GB/s (default: measured from the "
                  "capture's pinned copies, else 80% of the device's PCIe link)")
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--graph-launch-us", opts->graph_launch_us,
                  "graphs: host time of one cudaGraphLaunch (default: the capture's own, else one launch call)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--sectors-from", opts->sectors_from,
                  "coalesce: captures of a run recorded with GPUHOOK_SECTORS=1, whose sector counts to take "
                  "(default: the inputs' own; counting slows the kernels, so record the times without it)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("-q,--quiet", opts->quiet, "print nothing but errors");
  cmd->add_option("--max-records-per-byte", opts->max_records_per_byte,
                  "refuse a capture that decodes to more records than this per byte of file: the replay holds "
                  "about 330 bytes a record, and recordings hold under 1 a byte (0 = no limit)")
      ->capture_default_str();
  add_max_memory_flag(*cmd, opts->load);
  cmd->callback([opts, &exit_code] {
    std::vector<gantt::whatif::Change> changes;
    gantt::whatif::Options options;
    options.pinned_gbps = opts->pinned_gbps;
    options.graph_launch_us = opts->graph_launch_us;
    options.max_records_per_byte = opts->max_records_per_byte;
    options.sectors_from = opts->sectors_from;
    try {
      for (const std::string& c : opts->changes) changes.push_back(gantt::whatif::parse_change(c));
      check_load_fits(opts->inputs, opts->load, {"whatif replays captures loaded whole", gantt::scan::WholePath::kWhatif});
      const gantt::whatif::Prediction p = gantt::whatif::predict(opts->inputs, changes, options, opts->output);
      if (const std::string why = refused_on_reading(opts->output); !why.empty()) {
        std::remove(opts->output.c_str());  // created by predict() (never overwrites), so ours to remove
        std::cerr << "gantt-cli: whatif: " << opts->output << " would not read back as a capture: " << why
                  << "; not written\n";
        exit_code = kExitError;
        return;
      }
      for (const std::string& w : p.warnings) std::cerr << "gantt-cli: whatif: " << w << "\n";
      if (!opts->quiet) {
        for (const std::string& n : p.notes) std::cout << n << "\n";
        for (const auto& s : p.sections)
          std::cout << s.name << ": measured " << ms(s.measured.ns()) << ", replayed unchanged " << ms(s.unchanged.ns())
                    << " (" << pct(s.unchanged.ns(), s.measured.ns()) << "), predicted " << ms(s.predicted.ns()) << " ("
                    << pct(s.predicted.ns(), s.measured.ns()) << " against measured)\n";
        std::cout << opts->output << ": " << p.records_written << " records (predicted, not measured)\n";
      }
      exit_code = kExitOk;
    } catch (const gpuhook::CaptureError& e) {
      std::cerr << "gantt-cli: whatif: " << e.file() << ": byte " << e.offset() << ": " << e.what() << "\n";
      exit_code = kExitError;
    } catch (const std::exception& e) {
      std::cerr << "gantt-cli: whatif: " << e.what() << "\n";
      exit_code = kExitError;
    }
  });
}

}  // namespace gantt_cli
