// libFuzzer target for stats summaries (.gsum): any bytes go through read_summary_file() with
// the CLI's default limits, then everything a summary feeds (from_proto, merge, the stats
// report, diagnose, diff), and must end in output or an exception, never a crash, a hang or
// a huge allocation (a 21 KB file of unknown fields once parsed into 2.36 GB).
// Built without libFuzzer (GCC), the same entry point replays summary_corpus/ as a test.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <gpuhook/summary_file.h>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/diff.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/summary.h"

#include "memfd_input.h"

namespace ga = gantt::analysis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemfdInput input("gsum", data, size);
  if (!input.ok()) return 0;
  const std::string& path = input.path();
  try {
    gpuhook::SummaryLimits limits;
    limits.max_memory_bytes = 1ull << 30;  // the fuzzer's -rss_limit_mb
    ga::StatsSummary s = ga::from_proto(gpuhook::read_summary_file(path, limits));
    ga::StatsSummary twice = s;
    ga::merge(twice, s);
    for (ga::GroupBy by : {ga::GroupBy::kKernel, ga::GroupBy::kStream, ga::GroupBy::kDevice, ga::GroupBy::kRange}) {
      ga::StatsOptions o;
      o.by = by;
      try {
        (void)ga::format_stats(ga::report(twice, o), ga::Format::kJson);
      } catch (const std::invalid_argument&) {  // a grouping the summary lacks
      }
    }
    (void)ga::diagnose(s);
    (void)ga::diff_inputs(ga::diff_input(s, false), ga::diff_input(twice, true));
  } catch (const gpuhook::CaptureError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
