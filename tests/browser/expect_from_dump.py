#!/usr/bin/env python3
"""What the HTML page must show, from `gantt-cli dump` (the raw records), not from the page's
own data: GPU events with both times, their lanes, one event's stage times, and how many
events a search matches.
  expect_from_dump.py [--lanes stream|device|rank] [--kernel RE] [--search RE --sample RE] [--widest N] DUMP.txt... > expect.json
One dump per capture, in the order given to render."""
import argparse
import json
import re

ap = argparse.ArgumentParser()
ap.add_argument('--lanes', default='stream')
ap.add_argument('--search')
ap.add_argument('--sample')
ap.add_argument('--kernel', help='only events whose name matches, as render --kernel')
ap.add_argument('--widest', type=int, help='a page of this many events one by one: the width of the N-th widest')
ap.add_argument('dumps', nargs='+')
args = ap.parse_args()
field = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def unquote(v):
    if not v.startswith('"'):
        return v
    raw = v[1:-1]
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == '\\':
            if raw[i + 1] == 'x':
                out.append(int(raw[i + 2:i + 4], 16))
                i += 4
                continue
            out += raw[i + 1].encode()
            i += 2
            continue
        out += raw[i].encode()
        i += 1
    return out.decode('utf-8', errors='replace')


events, api_start, calls = [], {}, {}
for capture, dump in enumerate(args.dumps):
    for line in open(dump, encoding='ascii'):
        parts = line.split(' ', 2)
        if len(parts) < 3:
            continue
        kind, fields = parts[1], {k: unquote(v) for k, v in field.findall(parts[2])}
        if kind == 'api' and 'correlation_id' in fields:
            api_start[(capture, fields['correlation_id'])] = fields['start_ns']
        if kind == 'api' and capture == 0:
            calls.setdefault(fields['thread_id'], []).append(
                [int(fields['start_ns']), int(fields.get('end_ns', 0)), fields['name']])
        if args.kernel and not re.search(args.kernel, fields.get('name', '')):
            continue
        if kind in ('kernel', 'memcpy', 'memset') and 'start_ns' in fields and 'end_ns' in fields:
            fields['capture'] = capture
            events.append(fields)


def lane(e):
    device = e.get('device', '0')
    return {'stream': (e['capture'], device, e.get('stream', '0')), 'device': (e['capture'], device),
            'rank': e['capture']}[args.lanes]


# The host calls of the first capture per thread: [start, end, name] (absolute ns).
out = {'events': len(events), 'lanes': len({lane(e) for e in events}), 'host': {'calls': calls}}
if args.widest:
    widths = sorted((int(e['end_ns']) - int(e['start_ns']) for e in events), reverse=True)
    out['widest'] = {'n': args.widest, 'nth_ns': widths[args.widest - 1] if len(widths) >= args.widest else 0}
if args.search:
    sample = next(e for e in events if re.search(args.sample, e.get('name', ''), re.I) and 'queued_ns' in e)
    out.update({
        'sample': {'start_ns': sample['start_ns'], 'end_ns': sample['end_ns'], 'queued_ns': sample['queued_ns'],
                   'submitted_ns': sample['submitted_ns'],
                   'launch_ns': api_start[(sample['capture'], sample['correlation_id'])]},
        'sample_display': sample['name'],
        'search': args.search,
        'search_count': sum(1 for e in events if re.search(args.search, e.get('name', ''), re.I)),
    })
print(json.dumps(out))
