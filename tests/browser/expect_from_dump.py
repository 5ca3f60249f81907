#!/usr/bin/env python3
"""What the HTML page must show, from `gantt-cli dump` (the raw records), not from the page's
own data: GPU events with both times, their lanes (device, stream), one event's stage times,
and how many events a search matches.
  expect_from_dump.py DUMP.txt SEARCH_REGEX SAMPLE_NAME_REGEX > expect.json"""
import json
import re
import sys

dump, search, sample_pattern = sys.argv[1], sys.argv[2], sys.argv[3]
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


events, api_start = [], {}
for line in open(dump, encoding='ascii'):
    parts = line.split(' ', 2)
    if len(parts) < 3:
        continue
    kind, fields = parts[1], {k: unquote(v) for k, v in field.findall(parts[2])}
    if kind == 'api' and 'correlation_id' in fields:
        api_start[fields['correlation_id']] = fields['start_ns']
    if kind in ('kernel', 'memcpy', 'memset') and 'start_ns' in fields and 'end_ns' in fields:
        events.append(fields)

sample = next(e for e in events if re.search(sample_pattern, e.get('name', ''), re.I) and 'queued_ns' in e)
print(json.dumps({
    'events': len(events),
    'lanes': len({(e.get('device', '0'), e.get('stream', '0')) for e in events}),
    'sample': {'start_ns': sample['start_ns'], 'end_ns': sample['end_ns'], 'queued_ns': sample['queued_ns'],
               'submitted_ns': sample['submitted_ns'], 'launch_ns': api_start[sample['correlation_id']]},
    'sample_display': sample['name'],
    'search': search,
    'search_count': sum(1 for e in events if re.search(search, e.get('name', ''), re.I)),
}))
