#include "interpose.h"

#include <link.h>

#include <cstring>
#include <string>
#include <vector>

namespace gpuhook::hook {

void* find_real(const char* name) {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&find_real), &self) == 0) return nullptr;
  // The names first, the lookups after: dlopen inside dl_iterate_phdr's callback would take
  // the loader's lock that the iteration holds.
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
        return 0;
      },
      &paths);
  for (const std::string& path : paths) {
    if (self.dli_fname != nullptr && path == self.dli_fname) continue;
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* p = dlsym(handle, name);  // the object's own scope: itself, then its dependencies
    dlclose(handle);                // NOLOAD took a reference; the process keeps its own
    Dl_info where{};
    if (p == nullptr || (dladdr(p, &where) != 0 && where.dli_fbase == self.dli_fbase)) continue;
    return p;
  }
  return nullptr;
}

}  // namespace gpuhook::hook
