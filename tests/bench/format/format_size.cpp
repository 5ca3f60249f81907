// Size of a synthetic capture: bytes per kernel (kernel record + its launch ApiCall record)
// at the default zstd level, and the same events written as Chrome trace JSON the way
// Kineto writes them, for the ratio. Prints "figure value" lines; bench.sh makes the rows.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include <gpuhook/capture.h>

#include "synth.h"

namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

void append_us(std::string& o, int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  o += buf;
}

// One "X" event per kernel and per launch, with the args Kineto puts there.
uint64_t chrome_json_bytes(const std::vector<gpuhook::v1::Record>& recs) {
  std::unordered_map<uint32_t, std::string> names;
  std::string o = "{\"traceEvents\": [\n";
  for (const auto& r : recs) {
    if (r.has_string_def()) names[r.string_def().id()] = r.string_def().value();
    if (r.has_api()) {
      const auto& a = r.api();
      o += "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"" + json_escape(names[a.name_id()]) +
           "\", \"pid\": 4242, \"tid\": " + std::to_string(a.thread_id()) + ", \"ts\": ";
      append_us(o, a.start_ns());
      o += ", \"dur\": ";
      append_us(o, a.end_ns() - a.start_ns());
      o += ", \"args\": {\"cbid\": " + std::to_string(a.cbid()) + ", \"correlation\": " +
           std::to_string(a.correlation_id()) + "}},\n";
    }
    if (r.has_kernel()) {
      const auto& k = r.kernel();
      o += "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + json_escape(names[k.name_id()]) +
           "\", \"pid\": 0, \"tid\": " + std::to_string(k.stream()) + ", \"ts\": ";
      append_us(o, k.start_ns());
      o += ", \"dur\": ";
      append_us(o, k.end_ns() - k.start_ns());
      o += ", \"args\": {\"queued\": " + std::to_string(k.queued_ns()) + ", \"submitted\": " +
           std::to_string(k.submitted_ns()) + ", \"device\": 0, \"context\": 1, \"stream\": " +
           std::to_string(k.stream()) + ", \"correlation\": " + std::to_string(k.correlation_id()) +
           ", \"registers per thread\": " + std::to_string(k.registers_per_thread()) +
           ", \"shared memory\": " + std::to_string(k.static_shared_memory_bytes() + k.dynamic_shared_memory_bytes()) +
           ", \"grid\": [" + std::to_string(k.grid_x()) + ", 1, 1], \"block\": [" + std::to_string(k.block_x()) +
           ", 1, 1]}},\n";
    }
  }
  o += "]}\n";
  return o.size();
}

}  // namespace

// format_size [LEVEL]: the zstd level, by default the writer's and the hook's (3).
int main(int argc, char** argv) {
  gpuhook::synth::SynthOptions o;
  o.kernels = 1'000'000;
  gpuhook::WriterOptions wo;
  if (argc > 1) wo.zstd_level = std::atoi(argv[1]);
  char dir[] = "/tmp/gpuhook-size-XXXXXX";
  std::string path = std::string(mkdtemp(dir)) + "/size.gpuh";
  std::string err = gpuhook::synth::write_capture(path, o, wo);
  if (!err.empty()) {
    std::fprintf(stderr, "format_size: %s\n", err.c_str());
    return 2;
  }
  struct stat st {};
  stat(path.c_str(), &st);
  uint64_t gpuh = static_cast<uint64_t>(st.st_size);
  uint64_t json = chrome_json_bytes(gpuhook::synth::make_records(o));
  std::printf("kernels %llu\n", static_cast<unsigned long long>(o.kernels));
  std::printf("gpuh_bytes %llu\n", static_cast<unsigned long long>(gpuh));
  std::printf("bytes_per_kernel %.2f\n", static_cast<double>(gpuh) / static_cast<double>(o.kernels));
  std::printf("chrome_json_bytes %llu\n", static_cast<unsigned long long>(json));
  std::printf("json_ratio %.1f\n", static_cast<double>(json) / static_cast<double>(gpuh));
  unlink(path.c_str());
  rmdir(dir);
  return 0;
}
