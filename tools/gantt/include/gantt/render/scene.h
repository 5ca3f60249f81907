// The scene: a display list of rectangles, lines and text in pixel coordinates, built by
// the layout and drawn unchanged by every back end (SVG, PNG, PDF). Back ends make no
// layout decisions, so the three outputs of one chart agree.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace gantt {

struct Color {
  uint8_t r = 0, g = 0, b = 0, a = 255;
  bool visible() const { return a != 0; }
  friend bool operator==(const Color&, const Color&) = default;
};

struct Rect {
  float x = 0, y = 0, w = 0, h = 0;
  Color fill;
  Color stroke{0, 0, 0, 0};  // a == 0: no outline
  float stroke_width = 1;
  bool dashed = false;
  std::string tooltip;       // SVG <title>; ignored by raster back ends
  std::string link;          // SVG <a href>, e.g. a job's capture file; ignored by raster back ends
};

struct Line {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  Color color;
  float width = 1;
  bool dashed = false;
};

enum class Anchor : uint8_t { kStart, kMiddle, kEnd };

struct Text {
  float x = 0, y = 0;  // baseline
  std::string text;    // valid UTF-8 (the layout cleans names)
  float size = 11;
  Color color;
  Anchor anchor = Anchor::kStart;
  bool bold = false;
  std::string tooltip;
};

using Item = std::variant<Rect, Line, Text>;

inline Rect make_rect(float x, float y, float w, float h, Color fill) {
  Rect r;
  r.x = x; r.y = y; r.w = w; r.h = h; r.fill = fill;
  return r;
}
inline Line make_line(float x1, float y1, float x2, float y2, Color color, float width = 1, bool dashed = false) {
  Line l;
  l.x1 = x1; l.y1 = y1; l.x2 = x2; l.y2 = y2; l.color = color; l.width = width; l.dashed = dashed;
  return l;
}
inline Text make_text(float x, float y, std::string text, float size, Color color, Anchor anchor = Anchor::kStart,
                      bool bold = false) {
  Text t;
  t.x = x; t.y = y; t.text = std::move(text); t.size = size; t.color = color; t.anchor = anchor; t.bold = bold;
  return t;
}

struct Scene {
  int width = 0, height = 0;
  Color background{255, 255, 255, 255};
  std::string title;        // SVG <title> of the document
  std::vector<Item> items;  // drawn in order

  void rect(Rect r) { items.emplace_back(std::move(r)); }
  void line(Line l) { items.emplace_back(std::move(l)); }
  void text(Text t) { items.emplace_back(std::move(t)); }
};

}  // namespace gantt
