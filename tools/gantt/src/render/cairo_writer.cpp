// PNG and PDF back ends through cairo (headless image and PDF surfaces, DejaVu Sans from
// fonts-dejavu-core via fontconfig). Tooltips have no raster form and are skipped.
#include <cairo-pdf.h>
#include <cairo.h>

#include <cmath>

#include "gantt/render/render.h"

namespace gantt {

namespace {

void set(cairo_t* cr, const Color& c) {
  cairo_set_source_rgba(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0, c.a / 255.0);
}

void dash(cairo_t* cr, bool dashed) {
  static const double pattern[] = {4, 2};
  cairo_set_dash(cr, pattern, dashed ? 2 : 0, 0);
}

void draw(cairo_t* cr, const Scene& scene) {
  set(cr, scene.background);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  for (const Item& item : scene.items) {
    if (const Rect* r = std::get_if<Rect>(&item)) {
      if (r->w <= 0 || r->h <= 0) continue;
      cairo_rectangle(cr, r->x, r->y, r->w, r->h);
      if (r->fill.visible()) {
        set(cr, r->fill);
        if (r->stroke.visible()) cairo_fill_preserve(cr);
        else cairo_fill(cr);
      }
      if (r->stroke.visible()) {
        set(cr, r->stroke);
        cairo_set_line_width(cr, r->stroke_width);
        dash(cr, r->dashed);
        cairo_stroke(cr);
      }
      cairo_new_path(cr);
    } else if (const Line* l = std::get_if<Line>(&item)) {
      // Half-pixel offsets keep 1 px vertical/horizontal lines crisp on the raster.
      const bool vertical = l->x1 == l->x2;
      const double off = (std::fmod(l->width, 2.0) == 1.0) ? 0.5 : 0.0;
      cairo_move_to(cr, l->x1 + (vertical ? off : 0), l->y1 + (vertical ? 0 : off));
      cairo_line_to(cr, l->x2 + (vertical ? off : 0), l->y2 + (vertical ? 0 : off));
      set(cr, l->color);
      cairo_set_line_width(cr, l->width);
      dash(cr, l->dashed);
      cairo_stroke(cr);
    } else if (const Text* t = std::get_if<Text>(&item)) {
      cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                             t->bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
      cairo_set_font_size(cr, t->size);
      double x = t->x;
      if (t->anchor != Anchor::kStart) {
        cairo_text_extents_t ext;
        cairo_text_extents(cr, t->text.c_str(), &ext);
        x -= t->anchor == Anchor::kMiddle ? ext.x_advance / 2 : ext.x_advance;
      }
      set(cr, t->color);
      cairo_move_to(cr, x, t->y);
      cairo_show_text(cr, t->text.c_str());
      cairo_new_path(cr);
    }
  }
}

}  // namespace

bool write_raster(const Scene& scene, const std::string& path, RasterFormat format, std::string* error) {
  cairo_surface_t* surface =
      format == RasterFormat::kPng
          ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, scene.width, scene.height)
          : cairo_pdf_surface_create(path.c_str(), scene.width, scene.height);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
    if (error) *error = std::string("cairo: ") + cairo_status_to_string(cairo_surface_status(surface));
    cairo_surface_destroy(surface);
    return false;
  }
  cairo_t* cr = cairo_create(surface);
  draw(cr, scene);
  cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  if (status == CAIRO_STATUS_SUCCESS && format == RasterFormat::kPng)
    status = cairo_surface_write_to_png(surface, path.c_str());
  cairo_surface_finish(surface);
  if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  if (status != CAIRO_STATUS_SUCCESS) {
    if (error) *error = std::string("cairo: ") + cairo_status_to_string(status) + " writing " + path;
    return false;
  }
  return true;
}

}  // namespace gantt
