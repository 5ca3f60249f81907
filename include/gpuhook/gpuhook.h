/* gpuhook annotations for code that does not use NVTX.
 *
 *   gpuhook_range_push("step"); ... gpuhook_range_pop();
 *   gpuhook_mark("checkpoint");
 *   gpuhook_capture_start(); ... gpuhook_capture_stop();   (with GPUHOOK_RANGE=cudaProfilerApi)
 *   gpuhook_mem_tag(weights, "params");  (what an allocation is for: the memory view stacks by it)
 *   gpuhook_trigger("loss spiked");       (with GPUHOOK_FLIGHT: write the flight recorder's window now)
 *
 * Header only; nothing to link. The calls reach libgpuhook.so when it is preloaded
 * (LD_PRELOAD) and are no-ops otherwise: the hook's entry points are weak references that
 * stay null when the library is not loaded. Ranges land in the capture like NVTX ranges
 * (Range.source = 1) and nest per thread with NVTX pushes.
 */
#ifndef GPUHOOK_GPUHOOK_H
#define GPUHOOK_GPUHOOK_H

#ifdef __cplusplus
extern "C" {
#endif

void gpuhook_api_range_push(const char* name) __attribute__((weak));
void gpuhook_api_range_pop(void) __attribute__((weak));
void gpuhook_api_mark(const char* name) __attribute__((weak));
void gpuhook_api_capture_start(void) __attribute__((weak));
void gpuhook_api_capture_stop(void) __attribute__((weak));
void gpuhook_api_mem_tag(const void* ptr, const char* category) __attribute__((weak));
void gpuhook_api_trigger(const char* reason) __attribute__((weak));

static inline void gpuhook_range_push(const char* name) {
  if (gpuhook_api_range_push) gpuhook_api_range_push(name);
}
static inline void gpuhook_range_pop(void) {
  if (gpuhook_api_range_pop) gpuhook_api_range_pop();
}
static inline void gpuhook_mark(const char* name) {
  if (gpuhook_api_mark) gpuhook_api_mark(name);
}
/* Names what the allocation holding `ptr` (cudaMalloc, cudaMallocAsync, cudaMallocHost,
 * cudaMallocManaged; any address inside it) is for: "params", "activations", "optimizer".
 * Call it after the allocation; the category stays with that allocation until it is freed.
 * Untagged allocations are grouped by the NVTX range they were made in. */
static inline void gpuhook_mem_tag(const void* ptr, const char* category) {
  if (gpuhook_api_mem_tag) gpuhook_api_mem_tag(ptr, category);
}
/* With the flight recorder on (GPUHOOK_FLIGHT=30s), writes the last 30 s as a capture of its
 * own, its header naming `reason`; the program runs on. Nothing without the flight recorder. */
static inline void gpuhook_trigger(const char* reason) {
  if (gpuhook_api_trigger) gpuhook_api_trigger(reason);
}
static inline void gpuhook_capture_start(void) {
  if (gpuhook_api_capture_start) gpuhook_api_capture_start();
}
static inline void gpuhook_capture_stop(void) {
  if (gpuhook_api_capture_stop) gpuhook_api_capture_stop();
}

#ifdef __cplusplus
}
#endif

#endif /* GPUHOOK_GPUHOOK_H */
