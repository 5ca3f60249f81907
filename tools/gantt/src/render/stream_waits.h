// analysis::wait_causes() for the kernels a streamed chart draws one by one (stream_render.h),
// from the capture read as a stream: each drawn kernel's split needs only the last operation
// launched before it on its stream and the last 64 kernels that started before it on its
// device (waits.cpp). Those are found with bounded state: every operation read goes to the
// drawn kernel it precedes most closely (a binary search), which keeps the latest of them;
// the drawn kernels after it see them through a prefix. Internal to libgantt.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "gantt/analysis/waits.h"

namespace gantt::detail {

// A drawn kernel whose queued -> start wait is split.
struct WaitKernel {
  uint32_t device = 0, stream = 0;
  int32_t priority = 0;  // as recorded on it (0: its stream's, from the stream records)
  uint64_t seq = 0;      // its place in the file
  uint64_t launch = 0;   // waits.cpp launch_of(): its launch call, else queued, else start
  uint64_t queued = 0, start = 0, end = 0;
  // The other streams of its device whose last operation launched before it it waits for
  // (the legacy default stream's implicit barrier with the blocking streams).
  std::vector<uint32_t> barrier_streams;
};

class WaitContext {
 public:
  WaitContext() = default;
  explicit WaitContext(std::vector<WaitKernel> kernels);

  // Whether operations of this device and stream (any GPU work) or this device (kernels)
  // matter to a drawn kernel.
  bool wants_stream(uint32_t device, uint32_t stream) const { return by_launch_.count({device, stream}) != 0; }
  bool wants_device(uint32_t device) const { return by_start_.count(device) != 0; }
  bool wants_any() const { return !by_launch_.empty(); }
  // An operation with valid times on its stream, launched at `launch` (launch_of()).
  void offer_launch(uint32_t device, uint32_t stream, uint64_t launch, uint64_t seq, uint64_t end);
  // A kernel record with valid times: one of its device's kernels in start order.
  void offer_start(uint32_t device, uint32_t stream, int32_t priority, uint64_t seq, uint64_t start, uint64_t end);
  // Another share's offers (built from the same kernels).
  void absorb(const WaitContext& other);
  // The splits, by the kernels' seq; `stream_priority` fills the priorities not recorded on
  // the kernels, as ModelBuilder does.
  std::map<uint64_t, analysis::WaitSplit> splits(const std::map<uint32_t, int32_t>& stream_priority) const;

 private:
  struct Pred {
    uint64_t launch = 0, seq = 0, end = 0;
    bool set = false;
  };
  struct Recent {
    uint64_t start = 0, seq = 0, end = 0;
    uint32_t stream = 0;
    int32_t priority = 0;
    bool operator>(const Recent& o) const { return std::tie(start, seq) > std::tie(o.start, o.seq); }
  };
  struct ByLaunch {  // the drawn kernels that ask about one stream, by launch, and what it launched just before each
    std::vector<uint64_t> launches;
    std::vector<size_t> kernel;
    std::vector<bool> own;  // the kernel's own stream, else one of its barrier streams
    std::vector<Pred> before;
  };
  struct ByStart {  // the drawn kernels of one device by start, and the kernels that started just before each
    std::vector<uint64_t> starts;
    std::vector<size_t> kernel;
    std::vector<std::vector<Recent>> before;  // min-heaps of the latest kLookBack
  };
  std::vector<WaitKernel> kernels_;
  std::map<std::pair<uint32_t, uint32_t>, ByLaunch> by_launch_;
  std::map<uint32_t, ByStart> by_start_;
};

}  // namespace gantt::detail
