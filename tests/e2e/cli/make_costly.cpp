// Small files that once cost far more than their size (issue 44, items 11-13), written with the
// real CaptureWriter (fabricated records, no GPU):
//   make_costly streams OUT N [KERNELS]   N streams with one kernel each, then KERNELS more
//                                         kernels spread over them (default 0): a few bytes a
//                                         stream once made diagnose quadratic and render
//                                         kernels x streams
//   make_costly repeat OUT N [EVERY]      N launches and kernels on one stream, one in EVERY
//                                         (at random) 1 ns longer (default 0: all alike): EVERY
//                                         sets how many records a byte of file holds
//   make_costly gsum_unknown OUT BYTES    a version 2 summary whose message is BYTES of fields
//                                         no version knows (zstd makes them a few KB)
//   make_costly gsum_empty OUT BYTES      a summary of BYTES of empty by_kernel groups
// Every value is fixed: the same arguments give the same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <zstd.h>

#include <gpuhook/summary_file.h>

#include "capture_builder.h"

namespace v1 = gpuhook::v1;

namespace {

// Opens `path` with the CLI tests' header and "Fixture GPU", and interns the two names first.
void open_capture(gpuhook::test::CaptureBuilder& b) {
  if (!b.ok()) {
    std::fprintf(stderr, "make_costly: %s\n", b.error().c_str());
    std::exit(2);
  }
  b.header("costly", 4242, 1'000'000, v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
  b.fixture_gpu();
  b.intern("k");
  b.intern("cudaLaunchKernel");
}

void launch(gpuhook::test::CaptureBuilder& b, uint32_t stream, uint32_t corr, int64_t t, int64_t jitter = 0) {
  const auto at = [t](int64_t d) { return static_cast<uint64_t>(t + d); };
  b.api("cudaLaunchKernel", 100, at(0), at(100), corr);
  auto k = b.kernel("k", stream, corr, at(200), at(1200 + jitter), {216, 256, 32});
  k->set_queued_ns(t + 50);
  k->set_submitted_ns(t + 60);
}

void close_capture(gpuhook::test::CaptureBuilder& b) {
  if (!b.close()) {
    std::fprintf(stderr, "make_costly: %s\n", b.error().c_str());
    std::exit(2);
  }
}

// One kernel on each of `streams` streams, then `kernels` more round-robin over them; each
// starts as the one before ends, so nothing overlaps and every stream is one lane.
void streams(const std::string& path, uint64_t streams, uint64_t kernels) {
  gpuhook::test::CaptureBuilder b(path);
  open_capture(b);
  int64_t t = 2'000'000;
  uint32_t corr = 1;
  for (uint64_t i = 0; i < streams + kernels; ++i, t += 2000) launch(b, static_cast<uint32_t>(7 + i % streams), corr++, t);
  close_capture(b);
}

void repeat(const std::string& path, uint64_t n, uint64_t every) {
  gpuhook::test::CaptureBuilder b(path);
  open_capture(b);
  int64_t t = 2'000'000;
  uint64_t state = 42;  // a fixed LCG: the same bytes each run
  for (uint32_t corr = 1; corr <= n; ++corr, t += 2000) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t jitter = every && (state >> 33) % every == 0 ? 1 : 0;
    launch(b, 7, corr, t, jitter);
  }
  close_capture(b);
}

// The summary file's framing (proto/README.md, "Summaries") around a message body of our
// choosing, which write_summary_file() could only write by holding it parsed first.
void write_summary_body(const std::string& path, const std::string& body) {
  std::string out(24, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>(v >> (8 * i));
  };
  put32(0, 0x184D2A52);
  put32(4, 16);
  std::memcpy(out.data() + 8, "GPUHSUM", 8);
  put32(16, gpuhook::kSummaryVersion);
  put32(20, 0);
  std::string frame(ZSTD_compressBound(body.size()), '\0');
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 19);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
  const size_t n = ZSTD_compress2(c, frame.data(), frame.size(), body.data(), body.size());
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) {
    std::fprintf(stderr, "make_costly: %s\n", ZSTD_getErrorName(n));
    std::exit(2);
  }
  out.append(frame.data(), n);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!f) {
    std::fprintf(stderr, "make_costly: cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

// A real summary's version and error first, so only the extra fields can make it unusable.
std::string summary_prefix() {
  v1::StatsSummary s;
  s.set_version(gpuhook::kSummaryVersion);
  s.set_relative_error(0.01);
  s.set_exact_samples(1000);
  s.add_capture()->set_path("costly.gpuh");
  return s.SerializeAsString();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto num = [&](int i, uint64_t fallback) { return argc > i ? std::strtoull(argv[i], nullptr, 10) : fallback; };
  if (mode == "streams" && (argc == 4 || argc == 5)) {
    streams(argv[2], num(3, 1), num(4, 0));
  } else if (mode == "repeat" && (argc == 4 || argc == 5)) {
    repeat(argv[2], num(3, 1), num(4, 0));
  } else if ((mode == "gsum_unknown" || mode == "gsum_empty") && argc == 4) {
    std::string body = summary_prefix();
    const uint64_t bytes = num(3, 0);
    // Field 1000 varint 0 (3 bytes: 0xC0 0x3E 0x00), or field 9 (by_kernel) of length 0 (2 bytes).
    const std::string unit = mode == "gsum_unknown" ? std::string("\xC0\x3E\x00", 3) : std::string("\x4A\x00", 2);
    body.reserve(body.size() + bytes);
    while (body.size() + unit.size() <= bytes) body += unit;
    write_summary_body(argv[2], body);
  } else {
    std::fprintf(stderr,
                 "usage: make_costly streams OUT N [KERNELS] | repeat OUT N [BITS] | gsum_unknown OUT BYTES | "
                 "gsum_empty OUT BYTES\n");
    return 2;
  }
  return 0;
}
