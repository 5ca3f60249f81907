// The flame graph's drawing (flame_scene.h): the stacks of analysis/flame.h as a tree of
// frames, laid out in rows, coloured by name or by change.
#include "gantt/render/flame_scene.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "gantt/render/colors.h"

namespace gantt {
namespace {

using analysis::fixed;
using analysis::us;

struct Node {
  std::string name;
  uint64_t base = 0, next = 0;
  std::map<std::string, Node> children;  // sorted by name: deterministic layout
};

void add(Node& root, const std::string& stack, uint64_t w, bool is_next) {
  Node* n = &root;
  (is_next ? n->next : n->base) += w;
  for (const std::string& f : analysis::split_stack(stack)) {
    Node& c = n->children[f];
    c.name = f;
    (is_next ? c.next : c.base) += w;
    n = &c;
  }
}

int depth(const Node& n) {
  int d = 0;
  for (const auto& [k, c] : n.children) d = std::max(d, depth(c));
  return d + 1;
}

// Fits a label into `px` pixels at about 6.5 px per character of an 11 px font.
std::string fit(const std::string& s, float px) {
  const size_t chars = static_cast<size_t>(std::max(0.0f, px - 6) / 6.5f);
  if (chars < 3) return {};
  size_t cps = 0;
  for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
  if (cps <= chars) return s;
  size_t i = 0, n = 0;
  while (i < s.size() && n < chars - 1) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
    ++n;
  }
  return s.substr(0, i) + "\xE2\x80\xA6";
}

struct Layout {
  const FlameOptions& o;
  bool differential;
  float px_per_ns;
  int top;
  int rows;
  Scene& scene;

  static uint64_t weight(const Node& n, bool diff) { return diff ? std::max(n.base, n.next) : n.next; }

  Color color(const Node& n) const {
    if (!differential) return kernel_color(n.name);
    if (n.base == 0) return Color{200, 30, 30, 255};   // new: only in the new run
    if (n.next == 0) return Color{40, 80, 200, 255};   // removed
    const double change = static_cast<double>(n.next) / static_cast<double>(n.base) - 1.0;
    const double k = std::min(1.0, std::fabs(change) / 0.5);  // full colour at +-50%
    const auto mix = [&](double from, double to) { return static_cast<uint8_t>(std::lround(from + (to - from) * k)); };
    return change >= 0 ? Color{255, mix(245, 40), mix(240, 40), 255} : Color{mix(245, 40), mix(245, 90), 255, 255};
  }

  void draw(const Node& n, float x, int level) {
    const float w = static_cast<float>(weight(n, differential)) * px_per_ns;
    if (w < 0.5f) return;
    const float y = static_cast<float>(top + (rows - 1 - level) * o.row_px);
    Rect r = make_rect(std::round(x * 10) / 10, y, std::round(w * 10) / 10, static_cast<float>(o.row_px - 1), color(n));
    r.tooltip = n.name + ": ";
    if (differential) {
      r.tooltip += us(static_cast<int64_t>(n.base)) + " -> " + us(static_cast<int64_t>(n.next)) + " us";
      if (n.base) {
        const double change = 100.0 * (static_cast<double>(n.next) / static_cast<double>(n.base) - 1);
        r.tooltip += std::string(" (") + (change > 0 ? "+" : "") + fixed(change, 1) + "%)";
      }
    } else {
      r.tooltip += us(static_cast<int64_t>(n.next)) + " us";
    }
    scene.rect(std::move(r));
    if (const std::string label = fit(n.name, w); !label.empty())
      scene.text(make_text(x + 3, y + static_cast<float>(o.row_px) - 5, label, 11, text_color_on(color(n))));
    float cx = x;
    for (const auto& [k, c] : n.children) {
      draw(c, cx, level + 1);
      cx += static_cast<float>(weight(c, differential)) * px_per_ns;
    }
  }
};

Scene build(const Node& root, const FlameOptions& o, bool differential) {
  Scene s;
  const int header = 28;
  const int rows = std::max(1, depth(root) - 1);
  s.width = o.width_px;
  s.height = header + rows * o.row_px + 24;
  s.title = o.title;
  s.rect(make_rect(0, 0, static_cast<float>(s.width), static_cast<float>(s.height), Color{255, 255, 255, 255}));
  s.text(make_text(10, 18, o.title, 13, Color{0, 0, 0, 255}, Anchor::kStart, true));
  const uint64_t total = Layout::weight(root, differential);
  if (total == 0) {
    // An explicit empty chart, not a blank file.
    s.text(make_text(static_cast<float>(s.width) / 2, static_cast<float>(header + 14), "no GPU work in the selection", 12,
                     Color{120, 0, 0, 255}, Anchor::kMiddle));
    return s;
  }
  Layout l{o, differential, static_cast<float>(o.width_px - 20) / static_cast<float>(total), header, rows, s};
  float x = 10;
  for (const auto& [k, c] : root.children) {
    l.draw(c, x, 0);
    x += static_cast<float>(Layout::weight(c, differential)) * l.px_per_ns;
  }
  const std::string foot = differential ? "width: the larger of the two runs; red slower, blue faster (full colour at 50%)"
                                        : "width: GPU exec time; stacks: NVTX ranges of the launching thread, then the kernel";
  s.text(make_text(10, static_cast<float>(s.height - 8), foot, 10, Color{90, 90, 90, 255}));
  return s;
}

}  // namespace

Scene flame_scene(const analysis::Stacks& stacks, const FlameOptions& o) {
  Node root;
  for (const auto& [s, w] : stacks) add(root, s, w, true);
  return build(root, o, false);
}

Scene diff_flame_scene(const analysis::Stacks& base, const analysis::Stacks& next, const FlameOptions& o) {
  Node root;
  for (const auto& [s, w] : base) add(root, s, w, false);
  for (const auto& [s, w] : next) add(root, s, w, true);
  return build(root, o, true);
}

Scene stack_scenes(const Scene& upper, const Scene& lower) {
  Scene s = upper;
  s.width = std::max(upper.width, lower.width);
  const float dy = static_cast<float>(upper.height);
  for (Item item : lower.items) {
    std::visit(
        [&](auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, Line>) {
            x.y1 += dy;
            x.y2 += dy;
          } else {
            x.y += dy;
          }
        },
        item);
    s.items.push_back(std::move(item));
  }
  s.height = upper.height + lower.height;
  return s;
}

}  // namespace gantt
