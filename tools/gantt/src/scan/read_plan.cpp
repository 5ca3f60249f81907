// The read plan's estimates (gantt/scan/read_plan.h).
#include "gantt/scan/read_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gpuhook/capture.h>

#include "gantt/scan/open.h"

namespace gantt::scan {

// Each path is in the table once.
static_assert([] {
  for (const WholeCost& a : kWholeCosts) {
    int seen = 0;
    for (const WholeCost& b : kWholeCosts) seen += a.path == b.path;
    if (seen != 1 || a.estimated_bytes < a.measured_bytes) return false;
  }
  return true;
}());

namespace {

// A cgroup file's limit in bytes; UINT64_MAX when it is missing or says none ("max", or v1's
// page-rounded 2^63).
uint64_t limit_in(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return UINT64_MAX;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {  // past 64 bits: no limit that matters
    return UINT64_MAX;
  }
}

// The cgroup limits on this process's memory (a container, a Slurm job step): the least of
// its cgroup's and every ancestor's, as /proc/self/cgroup names them (v2 "0::/path", v1
// "N:memory:/path" or "N:...,memory,...:/path"); UINT64_MAX when none is set.
uint64_t cgroup_memory_limit() {
  uint64_t least = limit_in("/sys/fs/cgroup/memory.max");  // a cgroup namespace's own root
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    std::string dir, file;
    if (line.compare(0, a, "0") == 0 && controllers == ",,") {
      dir = "/sys/fs/cgroup", file = "/memory.max";
    } else if (controllers.find(",memory,") != std::string::npos) {
      dir = "/sys/fs/cgroup/memory", file = "/memory.limit_in_bytes";
    } else {
      continue;
    }
    for (std::string path = line.substr(b + 1); !path.empty() && path.find("..") == std::string::npos;) {
      least = std::min(least, limit_in(dir + (path == "/" ? "" : path) + file));
      if (path == "/") break;
      const size_t up = path.rfind('/');
      if (up == std::string::npos) break;  // not a path from the root
      path = up == 0 ? "/" : path.substr(0, up);
    }
  }
  return least;
}

}  // namespace

uint64_t usable_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t machine = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                                 : uint64_t{16} << 30;
  return std::min(machine, cgroup_memory_limit());
}

LoadEstimate estimate_load(const std::vector<std::string>& files, WholePath path, uint64_t max_memory,
                           uint64_t default_cap) {
  LoadEstimate e;
  for (const std::string& file : files) {
    const std::unique_ptr<gpuhook::CaptureReader> opened = open_capture(file, gpuhook::ReaderOptions{false, 0, 0});
    const gpuhook::CaptureReader& probe = *opened;
    const auto add = [&e](uint64_t n) { e.records = n > UINT64_MAX - e.records ? UINT64_MAX : e.records + n; };
    if (const auto& index = probe.index()) {
      for (const auto& chunk : index->chunk()) add(chunk.records());
    } else {
      struct stat st {};
      if (::stat(file.c_str(), &st) == 0) add(static_cast<uint64_t>(st.st_size) / kFileBytesPerRecord);
    }
  }
  const uint64_t per = std::max<uint64_t>(bytes_per_record(path), 1);
  e.bytes = e.records > UINT64_MAX / per ? UINT64_MAX : e.records * per;
  e.budget = max_memory ? max_memory : std::min(usable_memory() / 2, default_cap);
  return e;
}

}  // namespace gantt::scan
