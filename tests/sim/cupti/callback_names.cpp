// cuptiGetCallbackName for the runtime and driver domains, from tables generated out of the
// toolkit's cupti_runtime_cbid.h and cupti_driver_cbid.h at configure time.
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace {

struct CbidName {
  uint32_t cbid;
  const char* name;
};

constexpr CbidName kRuntime[] = {
#include "runtime_cbids.inc"
};
constexpr CbidName kDriver[] = {
#include "driver_cbids.inc"
};

template <size_t N>
const char* lookup(const CbidName (&table)[N], uint32_t cbid) {
  const auto it = std::find_if(std::begin(table), std::end(table),
                               [&](const CbidName& e) { return e.cbid == cbid; });
  return it == std::end(table) ? nullptr : it->name;
}

}  // namespace

extern "C" CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                                    const char** name) {
  if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const char* found = nullptr;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    found = lookup(kRuntime, cbid);
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    found = lookup(kDriver, cbid);
  } else {
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (found == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = found;
  return CUPTI_SUCCESS;
}
