// The scale benchmark's measuring program: one whole process per measurement, so its peak
// RSS is the measurement's own.
//   bench_job align-render DIR OUT.svg   # load + align + collectives + straggler + render
//   bench_job merge DIR OUT.gpuh         # gantt-cli merge's streaming path
// Prints "key value" lines: seconds, peak RSS, events, alignment error against offsets.txt.
#include <sys/resource.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/render.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds of this process: on a shared, loaded machine wall time measures the neighbours.
double cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

std::vector<std::string> captures_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".gpuh") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bench_job align-render|merge DIR OUT\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2], out = argv[3];
  const std::vector<std::string> files = captures_in(dir);
  const auto t0 = std::chrono::steady_clock::now();
  if (mode == "merge") {
    gantt::MergeResult r = gantt::merge_captures(files, out);
    printf("merge_cpu_s %.3f\n", cpu_s());
    printf("merge_s %.3f\nmerge_peak_rss_mib %.1f\nmerge_records %" PRIu64 "\n", seconds_since(t0), peak_rss_mib(),
           r.records_written);
    return 0;
  }
  gantt::Model model = gantt::load(files, gantt::LoadOptions{});
  const double load_s = seconds_since(t0);
  const double load_cpu_s = cpu_s();
  gantt::RankAlignment al = gantt::align_model_ranks(model);
  auto collectives = gantt::match_collectives(gantt::collective_calls(model));
  gantt::StragglerReport sr = gantt::find_straggler(collectives);
  const double align_s = seconds_since(t0) - load_s;
  const double align_cpu_s = cpu_s() - load_cpu_s;
  gantt::Selection sel = gantt::select_events(model, gantt::EventFilter{});
  gantt::RenderOptions ro;
  gantt::Scene scene = gantt::build_scene(model, sel, ro);
  std::ofstream svg(out, std::ios::binary | std::ios::trunc);
  gantt::write_svg(scene, svg);
  svg.close();
  const double total_s = seconds_since(t0);

  // Alignment error against the generator's truth.
  std::map<int, int64_t> truth;
  if (FILE* f = fopen((dir + "/offsets.txt").c_str(), "r")) {
    int r;
    long long off;
    while (fscanf(f, "%d %lld", &r, &off) == 2) truth[r] = off;
    fclose(f);
  }
  int64_t max_err = 0;
  for (size_t c = 0; c < al.captures.size(); ++c) {
    const int32_t rank = gantt::global_rank(model, static_cast<uint16_t>(c));
    if (!truth.count(rank)) continue;
    int64_t err = al.captures[c].offset_ns - truth[rank];
    max_err = std::max(max_err, err < 0 ? -err : err);
  }
  printf("captures %zu\nevents %zu\nload_s %.3f\nalign_s %.3f\nrender_s %.3f\ntotal_s %.3f\npeak_rss_mib %.1f\n",
         model.captures.size(), model.events.size(), load_s, align_s, total_s - load_s - align_s, total_s, peak_rss_mib());
  printf("cpu_s %.3f\nload_cpu_s %.3f\nalign_cpu_s %.3f\nrender_cpu_s %.3f\n", cpu_s(), load_cpu_s, align_cpu_s,
         cpu_s() - load_cpu_s - align_cpu_s);
  printf("align_max_error_ns %" PRId64 "\nstraggler %d\nsvg_bytes %ju\n", max_err, sr.straggler,
         static_cast<uintmax_t>(std::filesystem::file_size(out)));
  return 0;
}
