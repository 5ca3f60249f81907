#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace gpuhook::hook {
namespace {

int find_cudart(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name != nullptr && std::strstr(name, "libcudart.so") != nullptr) {
    *static_cast<std::string*>(out) = name;
    return 1;
  }
  return 0;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

std::vector<std::string> cupti_candidates(const std::string& override_path) {
  if (!override_path.empty()) return {override_path};
  std::vector<std::string> out;
  std::string cudart;
  dl_iterate_phdr(find_cudart, &cudart);
  if (!cudart.empty()) {
    std::string dir = dir_of(cudart);
    out.push_back(dir + "/libcupti.so.13");
    out.push_back(dir + "/../extras/CUPTI/lib64/libcupti.so.13");
  }
  out.push_back("libcupti.so.13");
  out.push_back("libcupti.so");
  out.push_back("/usr/local/cuda/lib64/libcupti.so.13");
  out.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  out.push_back("/usr/lib/x86_64-linux-gnu/libcupti.so.13");
  return out;
}

bool load_cupti(const std::string& override_path, CuptiApi* api, std::string* why) {
  std::string tried;
  for (const std::string& path : cupti_candidates(override_path)) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    CuptiApi a;
    a.handle = handle;
    a.path = path;
    bool complete = true;
#define GPUHOOK_CUPTI_LOAD(name)                                               \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));          \
  if (a.name == nullptr && std::strcmp(#name, "cuptiActivityEnableRuntimeApi") != 0 && \
      std::strcmp(#name, "cuptiActivityEnableDriverApi") != 0 && std::strcmp(#name, "cuptiSubscribe") != 0 && \
      std::strcmp(#name, "cuptiEnableCallback") != 0 && std::strcmp(#name, "cuptiGetResultString") != 0 && \
      std::strcmp(#name, "cuptiGetCallbackName") != 0) \
    complete = false;
    GPUHOOK_CUPTI_FUNCTIONS(GPUHOOK_CUPTI_LOAD)
#undef GPUHOOK_CUPTI_LOAD
    if (!complete) {
      tried += (tried.empty() ? "" : ", ") + path + " (missing entry points)";
      dlclose(handle);
      continue;
    }
    *api = a;
    return true;
  }
  *why = "CUPTI not found (tried " + tried + ")";
  return false;
}

std::string cupti_result_text(const CuptiApi& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.cuptiGetResultString != nullptr && api.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s != nullptr) {
    return std::string(s) + " (" + std::to_string(static_cast<int>(r)) + ")";
  }
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

}  // namespace gpuhook::hook
