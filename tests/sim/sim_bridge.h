// The narrow interface between the simulated runtime (libcudart.so.13) and the simulated
// CUPTI (libcupti.so.13). The activity store lives in libcupti because that is where a CUPTI
// client registers its buffers and clock; the runtime only asks "is this wanted?" and hands
// over finished records in the toolkit's own structs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cupti.h>

extern "C" {
// Current time on the clock CUPTI stamps records with: the client's registered timestamp
// callback if there is one, CLOCK_REALTIME otherwise (CUPTI's default on Linux).
uint64_t gpuhook_sim_now_ns(void);

int gpuhook_sim_kind_enabled(CUpti_ActivityKind kind);
int gpuhook_sim_runtime_api_enabled(CUpti_CallbackId cbid);
// Driver API records (CUPTI_ACTIVITY_KIND_DRIVER) wanted for this driver cbid.
int gpuhook_sim_driver_api_enabled(CUpti_CallbackId cbid);
int gpuhook_sim_latency_timestamps_enabled(void);
// CUpti_ActivityAPI.threadId of the calling thread, as the client's cuptiSetThreadIdType asks.
uint32_t gpuhook_sim_api_thread_id(void);
// cuptiActivityEnableAllSyncRecords: 1 (the default) records queries that found work pending.
int gpuhook_sim_all_sync_records(void);

// Copies one finished record (its size is the struct's size) into the calling thread's buffer.
void gpuhook_sim_emit(const void* record, size_t record_bytes);
// A GPU record: room in the launching thread's buffer at launch (0 when dropped), filled when
// the work ends. The buffer is not handed back complete before that.
uint64_t gpuhook_sim_reserve(size_t record_bytes);
void gpuhook_sim_complete(uint64_t reservation, const void* record, size_t record_bytes);

// Runtime-API callback for a subscriber (cuptiSubscribe + cuptiEnableDomain/Callback), and the
// external-correlation record that precedes each API record. `site` is CUpti_ApiCallbackSite.
// `params`: the call's *_params struct (generated_cuda_runtime_api_meta.h), or nullptr where
// the simulator builds none (as CUPTI gives none for __cudaLaunchKernel).
void gpuhook_sim_api_callback(int site, CUpti_CallbackId cbid, const char* function_name,
                              const char* symbol_name, uint32_t correlation_id,
                              uint64_t* correlation_data, void* return_value, const void* params);
void gpuhook_sim_emit_external_correlations(uint32_t correlation_id);

// The other way, defined by the simulated runtime and found with dlsym (the runtime may not be
// loaded): the CUPTI stream id of a stream handle, 0 when the handle is unknown.
uint32_t gpuhook_sim_stream_id(const void* stream, int per_thread);
// The device a stream handle belongs to (the current device when it was created), -1 when the
// handle is unknown; `per_thread` as above. Defined by the simulated runtime, found with dlsym.
int gpuhook_sim_stream_device(const void* stream, int per_thread);

// For the simulated NVML (tests/sim/nvml): what device `device` did in [from_ns, to_ns) of the
// CUPTI clock, from the runtime's plan. Defined by the simulated runtime, found with dlsym (NVML
// works without it: no activity). 0, or -1 for a bad device or window.
struct GpuhookSimActivity {
  uint64_t kernel_busy_ns;       // time at least one kernel ran
  double sm_share_ns;            // the SM share in use, integrated over time (at most the window)
  uint64_t memory_busy_ns;       // time a copy or memset ran (kernels' own memory traffic is not modelled)
  uint64_t pcie_tx_bytes;        // device-to-host bytes moved in the window
  uint64_t pcie_rx_bytes;        // host-to-device bytes moved in the window
  uint64_t device_memory_bytes;  // device memory allocated now (cudaMalloc, cudaMallocAsync, pools)
};
int gpuhook_sim_device_activity(int device, uint64_t from_ns, uint64_t to_ns, struct GpuhookSimActivity* out);

// For the simulated PM sampling (tests/sim/cupti/pm_sampling.cpp): `count` windows of
// `window_ns` from `from_ns`, each as fractions (0..1) of the window or of the device's peak.
// Defined by the simulated runtime, found with dlsym. 0, or -1 for bad arguments.
struct GpuhookSimPmWindow {
  double gr_active;      // time at least one kernel ran
  double sm_share;       // SM share held by kernels
  double sm_active;      // that share times each kernel's `active` (a stalled kernel reads low)
  double sm_occupancy;   // that share times each kernel's warp slots in use
  double tensor_active;
  double dram_read;      // of 4.8 TB/s: kernels' `dram_read`, copies from device memory
  double dram_write;
  double pcie_rx;        // of 64 GB/s: host-to-device copies
  double pcie_tx;        // device-to-host copies
  double nvlink_rx;      // not modelled: 0
  double nvlink_tx;
};
// For the simulated SASS metrics (tests/sim/cupti/sass_metrics.cpp): a kernel launch whose
// warps touch `sectors` 32-byte sectors, where its loads need `load_ideal` and its stores
// `store_ideal`. Counted while cuptiSassMetricsEnable is in force, as CUPTI's patched code counts.
void gpuhook_sim_sass_count(const char* function, uint64_t sectors, uint64_t load_ideal, uint64_t store_ideal);

int gpuhook_sim_pm_windows(int device, uint64_t from_ns, uint64_t window_ns, uint32_t count,
                           struct GpuhookSimPmWindow* out);
}
