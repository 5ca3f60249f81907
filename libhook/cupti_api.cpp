#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "message_text.h"

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
  // Never the unversioned libcupti.so: it may be a CUPTI of another major version, whose
  // record layouts this hook would misread.
  out.push_back("libcupti.so.13");
  out.push_back("/usr/local/cuda/lib64/libcupti.so.13");
  out.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  out.push_back("/usr/lib/x86_64-linux-gnu/libcupti.so.13");
  return out;
}

namespace {

// The entry points of `handle`; false when a required one is missing.
bool resolve_all(void* handle, const std::string& path, CuptiApi* out) {
  CuptiApi a;
  a.handle = handle;
  a.path = path;
  bool complete = true;
#define GPUHOOK_CUPTI_LOAD(name, required)                             \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name)); \
  if (a.name == nullptr && (required)) complete = false;
  GPUHOOK_CUPTI_FUNCTIONS(GPUHOOK_CUPTI_LOAD)
#undef GPUHOOK_CUPTI_LOAD
  if (complete) *out = a;
  return complete;
}

// The record layouts the hook reads (CUpti_ActivityKernel10, Memcpy6, ...) are CUDA 13's;
// an older CUPTI writes older structs at the same kinds (cupti_version.h: v130000 is 13.0).
constexpr uint32_t kMinCuptiVersion = 130000;

// "" when the library's version is one the hook reads, else why not.
std::string version_problem(const CuptiApi& api) {
  uint32_t version = 0;
  if (api.cuptiGetVersion(&version) != CUPTI_SUCCESS) return shown(api.path) + " does not say its version";
  if (version >= kMinCuptiVersion) return "";
  return shown(api.path) + " is CUPTI API version " + std::to_string(version) +
         ", older than 13.0 (130000): its records would be misread";
}

std::string loaded_name(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

bool load_cupti(const std::string& override_path, CuptiApi* api, std::string* why) {
  // A CUPTI the process already holds (torch.profiler loads its own copy) is the one to use:
  // a second copy would keep a second set of buffers, callbacks and clocks.
  if (override_path.empty()) {
    if (void* handle = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD)) {
      std::string path = loaded_name(handle, "libcupti.so.13");
      CuptiApi a;
      if (!resolve_all(handle, path, &a)) {
        dlclose(handle);
        *why = "the loaded CUPTI " + shown(path) + " lacks entry points the hook needs";
        return false;
      }
      std::string problem = version_problem(a);
      if (!problem.empty()) {
        dlclose(handle);
        *why = problem;
        return false;
      }
      *api = a;
      return true;
    }
  }
  std::string tried;
  for (const std::string& path : cupti_candidates(override_path)) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += (tried.empty() ? "" : ", ") + shown(path);
      continue;
    }
    CuptiApi a;
    if (!resolve_all(handle, path, &a)) {
      tried += (tried.empty() ? "" : ", ") + shown(path) + " (missing entry points)";
      dlclose(handle);
      continue;
    }
    std::string problem = version_problem(a);
    if (!problem.empty()) {
      tried += (tried.empty() ? "" : ", ") + problem;
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
