// SVG back end: real <text>, <title> tooltips, every string XML-escaped, coordinates
// rounded to 0.1 px so the same scene always gives the same bytes.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "gantt/render/render.h"
#include "gantt/model/text.h"

namespace gantt {

namespace {

void num(std::string& out, float v) {
  const long tenths = std::lround(static_cast<double>(v) * 10.0);
  const long whole = tenths / 10, frac = std::labs(tenths % 10);
  if (tenths < 0 && whole == 0) out += '-';
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, whole);
  out.append(buf, r.ptr);
  if (frac) {
    out += '.';
    out += static_cast<char>('0' + frac);
  }
}

void attr(std::string& out, const char* name, float v) {
  out += ' ';
  out += name;
  out += "=\"";
  num(out, v);
  out += '"';
}

void color(std::string& out, const char* name, const Color& c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " %s=\"#%02x%02x%02x\"", name, c.r, c.g, c.b);
  out += buf;
  if (c.a != 255) {
    std::snprintf(buf, sizeof buf, " %s-opacity=\"%.3g\"", name, c.a / 255.0);
    out += buf;
  }
}

void title(std::string& out, const std::string& tip) {
  out += "<title>";
  append_xml_escaped_lines(out, tip);
  out += "</title>";
}

}  // namespace

void write_svg(const Scene& scene, std::ostream& os) {
  std::string out;
  out.reserve(1 << 20);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"";
  attr(out, "width", static_cast<float>(scene.width));
  attr(out, "height", static_cast<float>(scene.height));
  out += " viewBox=\"0 0 " + std::to_string(scene.width) + " " + std::to_string(scene.height) + "\"";
  out += " font-family=\"DejaVu Sans, Verdana, sans-serif\">\n";
  out += "<title>";
  append_xml_escaped(out, scene.title);
  out += "</title>\n";
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\"";
  color(out, "fill", scene.background);
  out += "/>\n";
  for (const Item& item : scene.items) {
    if (const Rect* r = std::get_if<Rect>(&item)) {
      if (!r->link.empty()) {
        out += "<a href=\"";
        append_xml_escaped(out, r->link);
        out += "\">";
      }
      out += "<rect";
      attr(out, "x", r->x);
      attr(out, "y", r->y);
      attr(out, "width", std::max(r->w, 0.f));
      attr(out, "height", std::max(r->h, 0.f));
      if (r->fill.visible()) color(out, "fill", r->fill);
      else out += " fill=\"none\"";
      if (r->stroke.visible()) {
        color(out, "stroke", r->stroke);
        attr(out, "stroke-width", r->stroke_width);
        if (r->dashed) out += " stroke-dasharray=\"4 2\"";
      }
      if (r->tooltip.empty()) {
        out += "/>\n";
      } else {
        out += '>';
        title(out, r->tooltip);
        out += "</rect>\n";
      }
      if (!r->link.empty()) out += "</a>\n";
    } else if (const Line* l = std::get_if<Line>(&item)) {
      out += "<line";
      attr(out, "x1", l->x1);
      attr(out, "y1", l->y1);
      attr(out, "x2", l->x2);
      attr(out, "y2", l->y2);
      color(out, "stroke", l->color);
      attr(out, "stroke-width", l->width);
      if (l->dashed) out += " stroke-dasharray=\"4 2\"";
      out += "/>\n";
    } else if (const Text* t = std::get_if<Text>(&item)) {
      out += "<text";
      attr(out, "x", t->x);
      attr(out, "y", t->y);
      attr(out, "font-size", t->size);
      color(out, "fill", t->color);
      if (t->anchor == Anchor::kMiddle) out += " text-anchor=\"middle\"";
      else if (t->anchor == Anchor::kEnd) out += " text-anchor=\"end\"";
      if (t->bold) out += " font-weight=\"bold\"";
      out += '>';
      if (!t->tooltip.empty()) title(out, t->tooltip);
      append_xml_escaped(out, t->text);
      out += "</text>\n";
    }
    if (out.size() > (1u << 20)) {
      os.write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
  }
  out += "</svg>\n";
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

}  // namespace gantt
