#include "gantt/render/colors.h"

#include <cmath>

namespace gantt {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {
Color hsl(double h, double s, double l) {
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360.0) / 60.0;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) { r = c; g = x; }
  else if (hp < 2) { r = x; g = c; }
  else if (hp < 3) { g = c; b = x; }
  else if (hp < 4) { g = x; b = c; }
  else if (hp < 5) { r = x; b = c; }
  else { r = c; b = x; }
  const double m = l - c / 2;
  auto u8 = [](double v) { return static_cast<uint8_t>(std::lround(std::fmin(1.0, std::fmax(0.0, v)) * 255)); };
  return {u8(r + m), u8(g + m), u8(b + m), 255};
}
}  // namespace

Color range_color(uint32_t argb) {
  if (argb == 0) return Color{palette::kRange.r, palette::kRange.g, palette::kRange.b, 200};
  return Color{static_cast<uint8_t>(argb >> 16), static_cast<uint8_t>(argb >> 8), static_cast<uint8_t>(argb), 200};
}

Color text_color_on(Color bg) {
  const auto linear = [](uint8_t c) {
    const double v = c / 255.0;
    return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const double l = 0.2126 * linear(bg.r) + 0.7152 * linear(bg.g) + 0.0722 * linear(bg.b);
  // Contrast with black (l + 0.05) / 0.05 against white 1.05 / (l + 0.05): equal at l = 0.179.
  return l > 0.179 ? Color{0, 0, 0, 255} : Color{255, 255, 255, 255};
}

Color kernel_color(std::string_view name) {
  const uint64_t h = fnv1a(name);
  const double hue = 180.0 + static_cast<double>(h % 86);
  const double light = 0.40 + static_cast<double>((h >> 16) % 20) / 100.0;
  const double sat = 0.45 + static_cast<double>((h >> 32) % 30) / 100.0;
  return hsl(hue, sat, light);
}

Color kind_color(EventKind kind, uint8_t copy_kind) {
  switch (kind) {
    case EventKind::kKernel: return palette::kComputeUtil;
    case EventKind::kMemset: return palette::kMemset;
    case EventKind::kNccl: return palette::kNccl;
    case EventKind::kSync: return palette::kSync;
    case EventKind::kHostFunc: return palette::kHostFunc;
    case EventKind::kMemcpy: break;
  }
  switch (copy_kind) {
    case 1: case 3: return palette::kHtoD;  // HtoD, HtoA
    case 2: case 4: return palette::kDtoH;  // DtoH, AtoH
    default: return palette::kDtoD;
  }
}

Color exec_color(const Model& m, uint32_t e) {
  if (m.events.kind[e] == EventKind::kKernel) return kernel_color(m.display_name(e));
  return kind_color(m.events.kind[e], m.events.copy_kind[e]);
}

}  // namespace gantt
