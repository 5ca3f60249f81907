// gpuhook_trace_gen: one synthetic run written as a gpuhook capture, a torch.profiler/Kineto
// trace or an Nsight Systems SQLite export, for the tests of the readers (fabricated data).
//   gpuhook_trace_gen gpuh|kineto|kineto-gz|nsys OUT [--steps N] [--kernels N] [--seed S]
//                     [--rank R --world W] [--slow-ns NS]
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "trace_gen.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: gpuhook_trace_gen gpuh|kineto|kineto-gz|nsys OUT [--steps N] [--kernels N] [--seed S]\n"
               "                         [--rank R --world W] [--slow-ns NS]\n");
  return 2;
}

bool number(const char* text, long long* out) {
  char* end = nullptr;
  *out = std::strtoll(text, &end, 10);
  return end != text && *end == '\0' && *out >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string format = argv[1], out = argv[2];
  tracegen::Shape shape;
  for (int i = 3; i < argc; i += 2) {
    const std::string flag = argv[i];
    long long v = 0;
    if (i + 1 >= argc || !number(argv[i + 1], &v)) return usage();
    if (flag == "--steps") shape.steps = static_cast<uint64_t>(v);
    else if (flag == "--kernels") shape.kernels_per_step = static_cast<uint64_t>(v);
    else if (flag == "--seed") shape.seed = static_cast<uint32_t>(v);
    else if (flag == "--rank") shape.rank = static_cast<int32_t>(v);
    else if (flag == "--world") shape.world_size = static_cast<int32_t>(v);
    else if (flag == "--slow-ns") shape.slow_ns = v;
    else return usage();
  }
  try {
    const tracegen::Run run = tracegen::make_run(shape);
    if (format == "gpuh") tracegen::write_gpuh(run, out);
    else if (format == "kineto") tracegen::write_kineto(run, out, false);
    else if (format == "kineto-gz") tracegen::write_kineto(run, out, true);
    else if (format == "nsys") tracegen::write_nsys(run, out);
    else return usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuhook_trace_gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
