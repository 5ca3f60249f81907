// gantt-cli merge A.gpuh B.gpuh ... -o job.gpuh: one capture holding every rank, each
// section shifted onto the first capture's clock (see gantt/ranks/ranks.h for how the offsets are
// found). The output is never overwritten. Both passes scan: the first keeps each input's
// collective ends (analysis/clock_scan.h), the second copies records a chunk at a time.
#include <sys/stat.h>

#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "load_captures.h"
#include "gantt/ranks/ranks.h"

namespace gantt_cli {

namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
  bool quiet = false;
  unsigned threads = 0;  // threads that scan each input; 0 = every core
  LoadFlags load;
};

}  // namespace

void register_merge(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Merge the captures of a multi-rank job into one capture on one clock: same boot id = no shift;\n"
      "other hosts start from their REALTIME anchor, refined by the end times of the collectives\n"
      "they share (median, outliers dropped). Prints each capture's offset and the residual.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli merge rank0.gpuh rank1.gpuh rank2.gpuh rank3.gpuh -o job.gpuh\n"
      "  gantt-cli merge /scratch/job42/*.gpuh -o job42.gpuh && gantt-cli render job42.gpuh -o job42.svg --lanes rank\n");
  cmd->add_option("inputs", opts->inputs, "captures, one per rank (capture 0's clock is the reference)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", opts->output, "the merged capture to create (never overwritten)")->required();
  cmd->add_flag("-q,--quiet", opts->quiet, "do not print the offsets");
  cmd->add_option("-j,--threads", opts->threads,
                  "threads that scan an input's chunks side by side (0 = the CPUs this process may use)");
  cmd->add_flag("--in-memory", opts->load.in_memory,
                "load each input whole to align the clocks (one at a time), not scan it; over --max-memory too");
  add_load_flags(*cmd, opts->load);
  cmd->callback([opts, &exit_code] {
    // The same file twice (a.gpuh and ./a.gpuh, or a link) would merge one rank as two.
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    for (const std::string& in : opts->inputs) {
      struct stat st {};
      if (::stat(in.c_str(), &st) != 0) continue;  // the reader says what is wrong with it
      auto [it, added] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), in);
      if (!added) {
        std::cerr << "gantt-cli: merge: " << it->second << " and " << in << " are the same file\n";
        exit_code = kExitError;
        return;
      }
    }
    gantt::MergeResult r = gantt::merge_captures(
        opts->inputs, opts->output, [&o = *opts](const std::string& path) {
          return clock_inputs_of(path, o.load, o.threads, {"merge loads it whole to align the clocks", gantt::scan::WholePath::kMerge});
        });
    if (!opts->quiet) {
      for (const std::string& line : gantt::describe(r.alignment, r.inputs)) std::cout << line << "\n";
      std::cout << gantt::summarize(r.alignment) << "\n";
      std::cout << opts->output << ": " << r.records_written << " records from " << opts->inputs.size()
                << " captures\n";
    }
    for (const std::string& w : r.warnings) std::cerr << "gantt-cli: " << w << "\n";
    if (r.records_lost) {
      std::cerr << "gantt-cli: " << opts->output << ": " << r.records_lost << " records could not be written\n";
      exit_code = kExitError;
      return;
    }
    // A damaged input is merged as far as it reads, but the exit code says it is partial.
    exit_code = r.warnings.empty() ? kExitOk : kExitError;
  });
}

}  // namespace gantt_cli
