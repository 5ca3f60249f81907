// GPUHOOK_SECTORS: the 32-byte sectors each kernel's global loads and stores touched, and the
// fewest they need, through CUPTI's SASS metrics (cupti_sass_metrics.h). CUPTI patches a
// kernel's code to count them, so the kernels of such a run are slower than in a plain one:
// the counts are for `whatif --change coalesce` (and --sectors-from), not for the run's times.
//
// Counting starts on a context at its first kernel launch (the launch callback, on the
// program's thread; once per context) and is read at exit, on the writer thread, as one
// KernelSectors record per kernel name and device. A CUPTI or a device that cannot count
// leaves one line in the exit note and the run as it was.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cupti_api.h"
#include "gpu_source.h"

namespace gpuhook::hook {

class SectorCounter {
 public:
  // Why this CUPTI cannot count sectors ("" when it can).
  static std::string missing_entry_points(const CuptiApi& api);

  explicit SectorCounter(const CuptiApi& api) : api_(api) {}
  SectorCounter(const SectorCounter&) = delete;
  SectorCounter& operator=(const SectorCounter&) = delete;

  // A kernel launch on `ctx` is about to run (the launch callback's entry site).
  void on_launch(CUcontext ctx);
  // The counts so far, as KernelSectors records, then counting off. Writer thread, at exit.
  // Returns what went wrong, "" when nothing did.
  std::string finish(RecordSink& sink);

  // The metric names, as the SASS metrics API lists them (cupti_sass_metrics.h): the sectors
  // touched; the fewest, where the chip has the whole figure (sm_120 on); else its two parts.
  static constexpr const char* kSectors = "smsp__sass_sectors_mem_global";
  static constexpr const char* kIdeal = "smsp__sass_sectors_mem_global_ideal";
  static constexpr const char* kLoadIdeal = "smsp__sass_sectors_mem_global_op_ld_ideal";
  static constexpr const char* kStoreIdeal = "smsp__sass_sectors_mem_global_op_st_ideal";

 private:
  struct Device {
    uint32_t index = 0;
    bool configured = false;
    uint64_t sectors_id = 0;
    std::vector<uint64_t> ideal_ids;  // summed
  };
  struct Context {
    CUcontext ctx = nullptr;
    uint32_t device = 0;
  };
  Device* device(uint32_t index);  // with mu_ held; nullptr: not seen yet
  std::string start_on(CUcontext ctx, uint32_t device);  // with mu_ held
  std::string flush(const Context& c, const Device& d, RecordSink& sink);  // with mu_ held
  std::string configure(Device& d);           // with mu_ held

  static constexpr uint32_t kMaxContexts = 64;
  const CuptiApi& api_;
  // Contexts seen, read without the lock on every launch; added under it.
  std::atomic<CUcontext> seen_[kMaxContexts] = {};
  std::atomic<uint32_t> seen_count_{0};
  std::mutex mu_;  // never held while CUPTI calls back into the hook
  bool profiler_initialized_ = false;
  std::vector<Device> devices_;
  std::vector<Context> counting_;
  std::string problem_;  // the first thing that went wrong
};

}  // namespace gpuhook::hook
