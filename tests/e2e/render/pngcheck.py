#!/usr/bin/env python3
"""Pixel checks of a rendered PNG against the SVG of the same scene (no PIL needed).

pngcheck.py CHART.png CHART.svg NAME_PREFIX   (or "*": any opaque titled rectangle)
  - the PNG has the SVG's width and height;
  - the first <rect> whose <title> starts with NAME_PREFIX is painted in the PNG: the pixel
    at its centre has its fill colour (the lane is really drawn where the scene says);
  - the lane band around it is not blank.
"""
import re
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and ctype in (2, 6), "unexpected PNG type %d/%d" % (depth, ctype)
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def pixel(img, x, y):
    _, _, bpp, rows = img
    return tuple(rows[y][x * bpp:x * bpp + 3])


def main():
    png, svg, prefix = sys.argv[1:4]
    text = open(svg, encoding="utf-8").read()
    w = float(re.search(r'<svg[^>]* width="([\d.]+)"', text).group(1))
    h = float(re.search(r'<svg[^>]* height="([\d.]+)"', text).group(1))
    img = read_png(png)
    assert (img[0], img[1]) == (int(w), int(h)), "PNG %dx%d, SVG %dx%d" % (img[0], img[1], w, h)
    m = None
    for r in re.finditer(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="#(\w{6})"([^>]*)><title>([^<]*)', text):
        # "*": the widest opaque, titled rectangle (an event or a host call; not a queued-stage
        # segment, which the next launch's stages may draw over), at least 3 px wide. The widest,
        # not the first: how wide a given event is depends on the capture's span, which the
        # host's own time (a loaded machine) stretches.
        if prefix == "*":
            if "opacity" in r.group(6) or r.group(7).startswith("queued:"):
                continue
            if m is None or float(r.group(3)) > float(m.group(3)):
                m = r
            continue
        if r.group(7).startswith(prefix):
            m = r
            break
    assert m and (prefix != "*" or float(m.group(3)) >= 3), "no rect titled %r in the SVG" % prefix
    x, y, rw, rh = (float(m.group(i)) for i in range(1, 5))
    want = tuple(int(m.group(5)[i:i + 2], 16) for i in (0, 2, 4))
    cx, cy = int(x + rw / 2), int(y + rh / 2)
    got = pixel(img, cx, cy)
    assert all(abs(a - b) <= 3 for a, b in zip(got, want)), "pixel at %d,%d is %s, the scene says %s" % (cx, cy, got, want)
    # The lane is drawn along its length, not only at one point: many non-white pixels.
    painted = sum(1 for xx in range(img[0]) if pixel(img, xx, cy) != (255, 255, 255))
    assert painted > img[0] // 3, "lane row %d has only %d painted pixels" % (cy, painted)
    print("pngcheck: %s ok (%dx%d, %r at %d,%d = %s)" % (png, img[0], img[1], prefix, cx, cy, got))


main()
