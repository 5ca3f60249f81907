// The run as torch.profiler writes it (shared/TRACE-FORMATS.md, part A, as libkineto's
// output_json.cpp lays it out today): deviceProperties, distributedInfo, baseTimeNanoseconds,
// then traceEvents with ts relative to the base as µs with three decimals, the ac2g flows,
// the process and thread names, and the rows every trace has (Spans, Record Window End).
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "trace_gen.h"

namespace tracegen {

namespace {

// Kineto's fmtTs: integer ns as µs with exactly three decimals.
std::string us(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

const char* copy_word(int kind) {
  switch (kind) {
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 8: return "DtoD";
    case 10: return "PtoP";
    default: return "Unknown";
  }
}

const char* memory_word(int kind) {
  switch (kind) {
    case 1: return "Pageable";
    case 2: return "Pinned";
    case 3: return "Device";
    default: return "Unknown";
  }
}

const char* sync_word(int type) {
  switch (type) {
    case 1: return "Event Sync";
    case 2: return "Stream Wait Event";
    case 3: return "Stream Sync";
    case 4: return "Context Sync";
    default: return "Unknown Sync";
  }
}

class Out {
 public:
  Out(const std::string& path, bool gzip) : path_(path), gzip_(gzip) {
    if (gzip_) {
      gz_ = gzopen(path.c_str(), "wb6");
      if (gz_ == nullptr) throw std::runtime_error(path + ": cannot write");
    } else {
      file_ = std::fopen(path.c_str(), "wb");
      if (file_ == nullptr) throw std::runtime_error(path + ": cannot write");
    }
  }
  ~Out() {
    if (gz_ != nullptr) gzclose(gz_);
    if (file_ != nullptr) std::fclose(file_);
  }
  void put(const std::string& s) {
    const bool ok = gzip_ ? gzwrite(gz_, s.data(), static_cast<unsigned>(s.size())) == static_cast<int>(s.size())
                          : std::fwrite(s.data(), 1, s.size(), file_) == s.size();
    if (!ok) throw std::runtime_error(path_ + ": write failed");
  }
  void close() {
    const bool ok = gzip_ ? gzclose(gz_) == Z_OK : std::fclose(file_) == 0;
    gz_ = nullptr;
    file_ = nullptr;
    if (!ok) throw std::runtime_error(path_ + ": write failed");
  }

 private:
  std::string path_;
  bool gzip_;
  gzFile gz_ = nullptr;
  FILE* file_ = nullptr;
};

}  // namespace

void write_kineto(const Run& run, const std::string& path, bool gzip) {
  Out out(path, gzip);
  // c10d's facts on an NCCL kernel, as PyTorch writes them since 2024-05 (TRACE-FORMATS.md, A8).
  auto collective_args = [&](const Kernel& k) -> std::string {
    if (k.name != kAllReduce) return "";
    std::string ranks;
    for (int32_t r = 0; r < run.world_size; ++r) ranks += (r ? ", " : "") + std::to_string(r);
    return ", \"Collective name\": \"allreduce\", \"In msg nelems\": 1048576, \"Out msg nelems\": 1048576, "
           "\"dtype\": \"Float\", \"Group size\": " + std::to_string(run.world_size) +
           ", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[" +
           ranks + "]\"";
  };
  const std::string pid = std::to_string(run.pid);
  auto rel = [&](int64_t ns) { return us(ns - run.base_ns); };
  bool first = true;
  auto event = [&](const std::string& body) {
    out.put(first ? "\n  {" : ",\n  {");
    out.put(body);
    out.put("}");
    first = false;
  };
  // Files start with a newline before '{' (A1).
  out.put("\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
  for (size_t i = 0; i < run.devices.size(); ++i) {
    const Device& d = run.devices[i];
    out.put(std::string(i ? "," : "") + "\n    {\"id\": " + std::to_string(d.ordinal) + ", \"name\": " + quoted(d.name) +
            ", \"totalGlobalMem\": " + std::to_string(d.global_memory_bytes) +
            ", \"computeMajor\": " + std::to_string(d.cc_major) + ", \"computeMinor\": " + std::to_string(d.cc_minor) +
            ", \"maxThreadsPerBlock\": " + std::to_string(d.max_threads_per_block) +
            ", \"maxThreadsPerMultiprocessor\": " + std::to_string(d.max_threads_per_sm) +
            ", \"regsPerBlock\": " + std::to_string(d.registers_per_block) + ", \"warpSize\": " +
            std::to_string(d.warp_size) + ", \"sharedMemPerBlock\": " + std::to_string(d.shared_memory_per_block_bytes) +
            ", \"numSms\": " + std::to_string(d.sm_count) + ", \"regsPerMultiprocessor\": " +
            std::to_string(d.registers_per_sm) + ", \"sharedMemPerBlockOptin\": " +
            std::to_string(d.shared_memory_per_block_optin_bytes) + ", \"sharedMemPerMultiprocessor\": " +
            std::to_string(d.shared_memory_per_sm_bytes) + "}");
  }
  out.put("\n  ],\n");
  if (run.rank >= 0) {
    out.put("  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(run.rank) +
            ", \"world_size\": " + std::to_string(run.world_size) + ", \"pg_count\": 1, \"nccl_version\": \"2.21.5\"},\n");
  }
  out.put("  \"host_name\": " + quoted(run.host_name) + ",\n  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\",\n");
  out.put("  \"baseTimeNanoseconds\": " + std::to_string(run.base_ns) + ",\n  \"traceEvents\": [");

  // Host ops first (cpu_op, user_annotation), then runtime calls and GPU activities with their
  // flows, as Kineto writes them: per buffer, not in time order.
  int64_t external_id = 1;
  for (const Range& g : run.ranges) {
    const bool step = g.name.rfind("ProfilerStep#", 0) == 0;
    event("\"ph\": \"X\", \"cat\": \"" + std::string(step ? "cpu_op" : "user_annotation") + "\", \"name\": " +
          quoted(g.name) + ", \"pid\": " + pid + ", \"tid\": " + std::to_string(g.thread_id) + ",\n    \"ts\": " +
          rel(g.start_ns) + ", \"dur\": " + us(g.end_ns - g.start_ns) + ",\n    \"args\": {\"External id\": " +
          std::to_string(external_id) + ", \"Record function id\": 0, \"Ev Idx\": " + std::to_string(external_id + 1) + "}");
    ++external_id;
  }
  for (const ApiCall& c : run.calls) {
    const std::string corr = std::to_string(c.correlation_id);
    event("\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": " + quoted(c.name) + ", \"pid\": " + pid +
          ", \"tid\": " + std::to_string(c.thread_id) + ",\n    \"ts\": " + rel(c.start_ns) + ", \"dur\": " +
          us(c.end_ns - c.start_ns) + ",\n    \"args\": {\"cbid\": " + std::to_string(c.cbid) + ", \"correlation\": " +
          corr + "}");
    event("\"ph\": \"s\", \"id\": " + corr + ", \"pid\": " + pid + ", \"tid\": " + std::to_string(c.thread_id) +
          ", \"ts\": " + rel(c.start_ns) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"");
  }
  auto flow_end = [&](uint32_t device, uint32_t stream, uint32_t corr, int64_t start) {
    event("\"ph\": \"f\", \"id\": " + std::to_string(corr) + ", \"pid\": " + std::to_string(device) + ", \"tid\": " +
          std::to_string(stream) + ", \"ts\": " + rel(start) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"");
  };
  for (const Kernel& k : run.kernels) {
    const Device& d = run.devices.front();
    const double blocks = static_cast<double>(k.grid[0]) * k.grid[1] * k.grid[2];
    const double warps = blocks * ((k.block[0] * k.block[1] * k.block[2] + 31) / 32);
    char floats[96];
    std::snprintf(floats, sizeof floats, "\"blocks per SM\": %.6f, \"warps per SM\": %.6f", blocks / d.sm_count,
                  warps / d.sm_count);
    event("\"ph\": \"X\", \"cat\": \"kernel\", \"name\": " + quoted(k.name) + ", \"pid\": " + std::to_string(k.device) +
          ", \"tid\": " + std::to_string(k.stream) + ",\n    \"ts\": " + rel(k.start_ns) + ", \"dur\": " +
          us(k.end_ns - k.start_ns) + ",\n    \"args\": {\"queued\": 0, \"device\": " + std::to_string(k.device) +
          ", \"context\": 1, \"stream\": " + std::to_string(k.stream) + ", \"correlation\": " +
          std::to_string(k.correlation_id) + ", \"registers per thread\": " + std::to_string(k.registers_per_thread) +
          ", \"shared memory\": " + std::to_string(k.shared_memory_bytes) + ", " + floats + ", \"grid\": [" +
          std::to_string(k.grid[0]) + ", " + std::to_string(k.grid[1]) + ", " + std::to_string(k.grid[2]) +
          "], \"block\": [" + std::to_string(k.block[0]) + ", " + std::to_string(k.block[1]) + ", " +
          std::to_string(k.block[2]) + "], \"est. achieved occupancy %\": 50" + collective_args(k) + "}");
    flow_end(k.device, k.stream, k.correlation_id, k.start_ns);
  }
  for (const Copy& c : run.copies) {
    event("\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy " + std::string(copy_word(c.copy_kind)) + " (" +
          memory_word(c.src_kind) + " -> " + memory_word(c.dst_kind) + ")\", \"pid\": " + std::to_string(c.device) +
          ", \"tid\": " + std::to_string(c.stream) + ",\n    \"ts\": " + rel(c.start_ns) + ", \"dur\": " +
          us(c.end_ns - c.start_ns) + ",\n    \"args\": {\"device\": " + std::to_string(c.device) +
          ", \"context\": 1, \"stream\": " + std::to_string(c.stream) + ", \"correlation\": " +
          std::to_string(c.correlation_id) + ", \"bytes\": " + std::to_string(c.bytes) +
          ", \"memory bandwidth (GB/s)\": 11.5}");
    flow_end(c.device, c.stream, c.correlation_id, c.start_ns);
  }
  for (const Fill& f : run.fills) {
    event("\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (" + std::string(memory_word(f.memory_kind)) +
          ")\", \"pid\": " + std::to_string(f.device) + ", \"tid\": " + std::to_string(f.stream) + ",\n    \"ts\": " +
          rel(f.start_ns) + ", \"dur\": " + us(f.end_ns - f.start_ns) + ",\n    \"args\": {\"device\": " +
          std::to_string(f.device) + ", \"context\": 1, \"stream\": " + std::to_string(f.stream) + ", \"correlation\": " +
          std::to_string(f.correlation_id) + ", \"bytes\": " + std::to_string(f.bytes) +
          ", \"memory bandwidth (GB/s)\": 300.2}");
    flow_end(f.device, f.stream, f.correlation_id, f.start_ns);
  }
  for (const Sync& s : run.syncs) {
    event("\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"" + std::string(sync_word(s.type)) + "\", \"pid\": " +
          std::to_string(s.device) + ", \"tid\": " + std::to_string(s.stream) + ",\n    \"ts\": " + rel(s.start_ns) +
          ", \"dur\": " + us(s.end_ns - s.start_ns) + ",\n    \"args\": {\"cuda_sync_kind\": \"" + sync_word(s.type) +
          "\", \"stream\": " + std::to_string(s.stream) + ", \"correlation\": " + std::to_string(s.correlation_id) +
          ", \"device\": " + std::to_string(s.device) + ", \"context\": 1}");
  }
  // Names: the host process and thread, each device's process and stream rows.
  const std::string start = run.ranges.empty() ? "0.000" : rel(run.ranges.front().start_ns);
  event("\"name\": \"process_name\", \"ph\": \"M\", \"ts\": " + start + ", \"pid\": " + pid +
        ", \"tid\": 0, \"args\": {\"name\": \"python3\"}");
  event("\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": " + start + ", \"pid\": " + pid +
        ", \"tid\": 0, \"args\": {\"labels\": \"CPU\"}");
  event("\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + start + ", \"pid\": " + pid + ", \"tid\": " +
        std::to_string(run.pid + 1) + ", \"args\": {\"name\": \"thread " + std::to_string(run.pid + 1) +
        " (python3)\"}");
  for (const Device& d : run.devices) {
    const std::string dev = std::to_string(d.ordinal);
    event("\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": " + start + ", \"pid\": " + dev +
          ", \"tid\": 0, \"args\": {\"labels\": \"GPU " + dev + "\"}");
    event("\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": " + start + ", \"pid\": " + dev +
          ", \"tid\": 7, \"args\": {\"name\": \"stream 7 \"}");
  }
  // The rows with string pids that every trace has (A2).
  const int64_t last = run.ranges.empty() ? run.base_ns : run.ranges.back().end_ns;
  event("\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": " + start + ", \"dur\": " +
        us(last - (run.ranges.empty() ? run.base_ns : run.ranges.front().start_ns)) +
        ", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op "
        "count\": 0}");
  event("\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": " +
        rel(last + 1000));
  out.put("\n  ],\n  \"traceName\": \"" + std::string("rank") + std::to_string(std::max(run.rank, 0)) +
          ".pt.trace.json\"\n}\n");
  out.close();
}

}  // namespace tracegen
