#include "gantt/align.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace gantt {

uint64_t ClockAlignment::to_host(uint32_t device, uint64_t gpu_ns) const {
  if (gpu_ns == 0 || method != AlignMethod::kFit) return gpu_ns;
  for (const DeviceClockFit& f : fits) {
    if (f.device != device) continue;
    const double dx = static_cast<double>(static_cast<int64_t>(gpu_ns - f.reference_gpu_ns));
    const double host = static_cast<double>(gpu_ns) + f.offset_ns + f.drift * dx;
    return host <= 0 ? 1 : static_cast<uint64_t>(std::llround(host));
  }
  return gpu_ns;
}

ClockAlignment fit_clocks(bool shared_clock, const std::vector<ClockPair>& pairs) {
  ClockAlignment a;
  if (shared_clock) return a;
  std::map<uint32_t, std::vector<const ClockPair*>> by_device;
  for (const ClockPair& p : pairs)
    if (p.host_ns && p.gpu_ns) by_device[p.device].push_back(&p);
  if (by_device.empty()) {
    a.method = AlignMethod::kNone;
    return a;
  }
  a.method = AlignMethod::kFit;
  for (auto& [device, ps] : by_device) {
    DeviceClockFit f;
    f.device = device;
    f.pairs = ps.size();
    f.reference_gpu_ns = ps.front()->gpu_ns;
    // Fit y = host - gpu against x = gpu - reference in doubles of small magnitude: the
    // absolute values (~1e18) would lose the nanoseconds.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const double n = static_cast<double>(ps.size());
    for (const ClockPair* p : ps) {
      const double x = static_cast<double>(static_cast<int64_t>(p->gpu_ns - f.reference_gpu_ns));
      const double y = static_cast<double>(static_cast<int64_t>(p->host_ns - p->gpu_ns));
      sx += x; sy += y; sxx += x * x; sxy += x * y;
    }
    const double den = n * sxx - sx * sx;
    if (ps.size() >= 2 && std::fabs(den) > 1e-9 * std::max(1.0, n * sxx)) {
      f.drift = (n * sxy - sx * sy) / den;
      f.offset_ns = (sy - f.drift * sx) / n;
    } else {
      f.drift = 0;
      f.offset_ns = sy / n;
    }
    double ss = 0, mx = 0;
    for (const ClockPair* p : ps) {
      const double x = static_cast<double>(static_cast<int64_t>(p->gpu_ns - f.reference_gpu_ns));
      const double y = static_cast<double>(static_cast<int64_t>(p->host_ns - p->gpu_ns));
      const double r = y - (f.offset_ns + f.drift * x);
      ss += r * r;
      mx = std::max(mx, std::fabs(r));
    }
    f.residual_rms_ns = std::sqrt(ss / n);
    f.residual_max_ns = mx;
    a.fits.push_back(f);
  }
  return a;
}

namespace {
std::string format_ns(double ns) {
  char buf[64];
  const double a = std::fabs(ns);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%+.3f s", ns / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%+.3f ms", ns / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%+.3f us", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%+.0f ns", ns);
  return buf;
}
}  // namespace

std::string describe(const ClockAlignment& a) {
  switch (a.method) {
    case AlignMethod::kSharedClock: return "shared clock (CUPTI timestamp callback), no shift";
    case AlignMethod::kNone: return "UNALIGNED: no shared clock and no clock pairs, GPU times as recorded";
    case AlignMethod::kFit: break;
  }
  std::string s = "fitted";
  for (const DeviceClockFit& f : a.fits) {
    char buf[160];
    std::string rms = format_ns(f.residual_rms_ns);
    if (!rms.empty() && rms[0] == '+') rms.erase(0, 1);
    std::snprintf(buf, sizeof buf, " dev%u: offset %s, drift %+.2f ppm, residual %s rms (%llu pairs);", f.device,
                  format_ns(f.offset_ns).c_str(), f.drift * 1e6, rms.c_str(),
                  static_cast<unsigned long long>(f.pairs));
    s += buf;
  }
  if (!s.empty() && s.back() == ';') s.pop_back();
  return s;
}

}  // namespace gantt
