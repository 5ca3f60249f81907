#!/usr/bin/env python3
"""What the HTML page must show of NVTX ranges, from `gantt-cli dump` (the raw push/pop
records), not from the page's data: the ranges nested per thread, each GPU event's range path
(the innermost range open on its launching thread at its launch), and for one range
occurrence and one time span the figures the page's linkage, stats table and flame graph
must agree with.
  expect_nvtx.py DUMP.txt RANGE_NAME OCCURRENCE > expect.json
RANGE_NAME OCCURRENCE: the range the test selects (e.g. forward 1: the second "forward"); the
span the stats and flame graph are checked on is the top-level range around it. And memory in
use after each allocation and free (the memory strip)."""
import json
import re
import sys

dump, range_name, occurrence = sys.argv[1], sys.argv[2], int(sys.argv[3])
field = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')

ranges, stacks, api, events = [], {}, {}, []
live, memory = {}, []  # address -> bytes; (time, bytes in use after it) per change
for line in open(dump, encoding='ascii'):
    parts = line.split(' ', 2)
    if len(parts) < 3:
        continue
    kind, f = parts[1], {k: (v[1:-1] if v.startswith('"') else v) for k, v in field.findall(parts[2])}
    if kind == 'range':
        tid, t = f['thread_id'], int(f['time_ns'])
        stack = stacks.setdefault(tid, [])
        if 'PUSH' in f['type']:
            r = {'name': f.get('name', ''), 'tid': tid, 'start': t, 'end': None, 'parent': stack[-1] if stack else None}
            r['path'] = (ranges[r['parent']]['path'] + '/' if r['parent'] is not None else '') + r['name']
            stack.append(len(ranges))
            ranges.append(r)
        elif 'POP' in f['type'] and stack:
            ranges[stack.pop()]['end'] = t
    elif kind == 'memory':
        if f['op'] == 'MEMORY_OP_ALLOC':
            live[f['address']] = int(f['bytes'])
        else:
            live.pop(f['address'], None)
        memory.append((int(f['time_ns']), sum(live.values())))
    elif kind == 'api' and 'correlation_id' in f:
        api[f['correlation_id']] = (f['thread_id'], int(f['start_ns']))
    elif kind in ('kernel', 'memcpy', 'memset') and 'start_ns' in f and 'end_ns' in f:
        events.append({'name': f.get('name', ''), 'kind': kind, 'start': int(f['start_ns']), 'end': int(f['end_ns']),
                       'launch': api.get(f.get('correlation_id'))})


def innermost(tid, t):
    best = None
    for i, r in enumerate(ranges):
        if r['tid'] == tid and r['start'] <= t and r['end'] is not None and t <= r['end']:
            if best is None or r['start'] >= ranges[best]['start']:
                best = i
    return best


def inside(i, outer):
    while i is not None:
        if i == outer:
            return True
        i = ranges[i]['parent']
    return False


for e in events:
    e['range'] = innermost(*e['launch']) if e['launch'] else None
    e['path'] = ranges[e['range']]['path'] if e['range'] is not None else ''

picked = [i for i, r in enumerate(ranges) if r['name'] == range_name][occurrence]
top = picked
while ranges[top]['parent'] is not None:
    top = ranges[top]['parent']
a, b = ranges[top]['start'], ranges[top]['end']
in_span = [e for e in events if a <= e['start'] <= b]
# Kernels by name; the copies' names are the page's own words ("memcpy HtoD"), not dump's.
kernels = [e for e in in_span if e['kind'] == 'kernel']
stats = {}
for e in kernels:
    s = stats.setdefault(e['name'], {'count': 0, 'total_ns': 0})
    s['count'] += 1
    s['total_ns'] += e['end'] - e['start']
flame = {}
for e in kernels:
    parts = (e['path'].split('/') if e['path'] else []) + [e['name']]
    for k in range(1, len(parts) + 1):
        flame['/'.join(parts[:k])] = flame.get('/'.join(parts[:k]), 0) + e['end'] - e['start']
sample = next(e for e in events if e['range'] is not None and ranges[e['range']]['parent'] is not None)
print(json.dumps({
    'ranges': len(ranges),
    'threads': len({r['tid'] for r in ranges}),
    'picked': {'start': ranges[picked]['start'], 'path': ranges[picked]['path'],
               'launched': sum(1 for e in events if inside(e['range'], picked))},
    'sample': {'start': sample['start'], 'path': sample['path'], 'name': sample['name']},
    'span': {'start': a, 'end': b, 'events': len(in_span), 'stats': stats, 'flame': flame,
             'all_ns': sum(e['end'] - e['start'] for e in in_span)},
    'relu_events': sum(1 for e in events if re.search('relu', e['name'], re.I)),
    'zoom_into': ranges[picked]['path'],
    'memory': memory,
    'memory_peak': max((b for _, b in memory), default=0),
}))
