#include "gantt/model/align.h"

#include <gpuhook/v1/capture.pb.h>

namespace gantt {

ClockAlignment clock_alignment(uint64_t header_features) {
  ClockAlignment a;
  if ((header_features & gpuhook::v1::FEATURE_HOST_CLOCK_CALLBACK) == 0) a.method = AlignMethod::kNone;
  return a;
}

std::string describe(const ClockAlignment& a) {
  switch (a.method) {
    case AlignMethod::kSharedClock: return "shared clock (CUPTI timestamp callback), no shift";
    case AlignMethod::kNone: break;
  }
  return "UNALIGNED: GPU times not on the host clock (no CUPTI timestamp callback), drawn as recorded";
}

}  // namespace gantt
