#!/usr/bin/env python3
"""libgantt's walls (issue 43): a part includes only its own headers and those of the parts it
links, so no static-library link order can hide an upward call.

    walls_check.py TOOLS_DIR PART=BELOW,BELOW ... [--graph]

TOOLS_DIR is tools/; each PART=... says which parts a part links (tools/gantt/CMakeLists.txt
gantt_part(), passed by the ctest). A part's files are tools/gantt/src/<part>/ and
tools/gantt/include/gantt/<part>/; the parts below it are everything it links, directly or not.
Also refused: an #include "../...", anywhere under tools/, and a header of libgantt outside
include/gantt/<part>/ (headers mirror src/), and a gpuhook::CaptureReader made anywhere under
tools/ but libgantt's scan part (gantt::scan::open_capture is the one way in, which also reads
other tools' traces). --graph prints which part includes which.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# A reader made in place: `CaptureReader name(...)`, `CaptureReader name{...}`, `CaptureReader(...)`
# or `make_unique<gpuhook::CaptureReader>(...)`; a reference or a pointer to one is not.
OPENS = re.compile(r'CaptureReader\s+\w+\s*[({]|CaptureReader\s*[({]|make_unique<\s*(gpuhook::)?CaptureReader\s*>')


def closure(links, part, seen=None):
    seen = set() if seen is None else seen
    for below in links.get(part, ()):
        if below not in seen:
            seen.add(below)
            closure(links, below, seen)
    return seen


def files_under(root):
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if name.endswith(('.h', '.hpp', '.cpp', '.cc')):
                yield os.path.join(dirpath, name)


def includes(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def main(argv):
    graph = '--graph' in argv
    args = [a for a in argv[1:] if a != '--graph']
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tools = args[0]
    links = {}
    for spec in args[1:]:
        part, _, below = spec.partition('=')
        links[part] = [b for b in below.split(',') if b]
    gantt = os.path.join(tools, 'gantt')
    problems = []
    edges = {}

    for path in files_under(tools):
        rel = os.path.relpath(path, tools)
        for number, header in includes(path):
            if header.startswith('../'):
                problems.append(f'tools/{rel}:{number}: #include "{header}": name a header by its path under an include directory')

    scan = os.path.join(gantt, 'src', 'scan')
    for path in files_under(tools):
        if os.path.commonpath([path, scan]) == scan:
            continue
        rel = os.path.relpath(path, tools)
        with open(path, encoding='utf-8', errors='replace') as f:
            for number, line in enumerate(f, 1):
                code = line.split('//', 1)[0]
                if OPENS.search(code):
                    problems.append(f'tools/{rel}:{number}: opens a capture itself: gantt::scan::open_capture() (gantt/scan/open.h) is the one way in')

    headers = os.path.join(gantt, 'include', 'gantt')
    for name in sorted(os.listdir(headers)):
        if not os.path.isdir(os.path.join(headers, name)):
            problems.append(f'tools/gantt/include/gantt/{name}: a header outside include/gantt/<part>/')
        elif name not in links:
            problems.append(f'tools/gantt/include/gantt/{name}/: no part {name} (tools/gantt/CMakeLists.txt gantt_part)')

    for part in sorted(links):
        allowed = closure(links, part) | {part}
        for root in (os.path.join(gantt, 'src', part), os.path.join(headers, part)):
            for path in files_under(root):
                rel = os.path.relpath(path, tools)
                for number, header in includes(path):
                    m = re.match(r'gantt/([^/]+)/', header)
                    if not m:
                        continue
                    used = m.group(1)
                    if used != part:
                        edges.setdefault(part, set()).add(used)
                    if used not in allowed:
                        below = ', '.join(sorted(allowed - {part})) or 'nothing'
                        problems.append(f'tools/{rel}:{number}: {part} includes <{header}>, but {part} links only {below}')

    if graph:
        for part in sorted(links):
            print(f'{part} -> {", ".join(sorted(edges.get(part, ()))) or "-"}')
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} breach(es) of libgantt\'s walls')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
