#!/usr/bin/env bash
# export --format sqlite: the database answers in SQL what stats, dump and the CSV export say
# of the same capture (a synthetic one with names, API calls and copies; the v2 fixture with
# NVTX and NCCL records), its schema and indices are there, and bad output paths fail cleanly.
#   export_sqlite_test.sh GANTT_CLI MAKE_CAPTURE FIXTURE_DIR
set -u
cli=$1 make_capture=$2 fixtures=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
"$make_capture" synth "$work/s.gpuh" 2000 3
for cap in "$work/s.gpuh" "$fixtures/v2/small.gpuh"; do
  "$cli" export "$cap" --format sqlite -o "$work/db.sqlite" 2>/dev/null || { echo "FAIL: export exit $?"; fails=$((fails + 1)); continue; }
  "$cli" stats "$cap" --format json --top 0 > "$work/stats.json" 2>/dev/null
  "$cli" export "$cap" --format csv -o "$work/events.csv" 2>/dev/null
  "$cli" dump "$cap" --kind api,range,nccl > "$work/dump.txt" 2>/dev/null
  python3 - "$work/db.sqlite" "$work/stats.json" "$work/events.csv" "$work/dump.txt" <<'PY' && echo "ok   $(basename "$cap"): SQL agrees with stats, csv and dump" || fails=$((fails + 1))
import csv, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
stats = json.load(open(sys.argv[2]))
rows = list(csv.DictReader(open(sys.argv[3])))
dump = open(sys.argv[4]).read().splitlines()
q = lambda sql: db.execute(sql).fetchall()
bad = []
def check(what, got, want):
    if got != want: bad.append(f"{what}: sql {got}, expected {want}")
tables = {r[0] for r in q("select name from sqlite_master where type='table'")}
for t in ["kernels", "copies", "syncs", "api", "nvtx", "nccl", "devices", "strings", "threads", "captures", "meta"]:
    check("table " + t, t in tables, True)
check("indices", len(q("select name from sqlite_master where type='index' and name not like 'sqlite_%'")) >= 6, True)
# GPU work as stats counts it: kernels (NCCL ones too), copies and memsets.
gpu = q("select count(*), sum(end_ns - start_ns) from (select start_ns, end_ns from kernels union all "
        "select start_ns, end_ns from copies)")[0]
check("GPU events", gpu[0], stats["events"])
check("GPU time", gpu[1], stats["gpu_time_ns"])
# Per kernel name, as stats --by kernel groups them (demangled names).
top = q("select s.value, count(*), sum(k.end_ns - k.start_ns) from kernels k join strings s on s.id = k.demangled_id "
        "group by s.value order by 3 desc limit 1")
kernel_groups = [g for g in stats["groups"] if not g["key"].startswith("[")]
if top and kernel_groups:
    want = max(kernel_groups, key=lambda g: g["total_ns"])
    check("top kernel", (top[0][1], top[0][2]), (want["count"], want["total_ns"]))
# Every GPU row of the CSV is one row of the event tables; its host rows those of api and nvtx.
gpu_rows = [r for r in rows if r["kind"] not in ("api", "nvtx")]
check("event rows", q("select (select count(*) from kernels) + (select count(*) from copies) + "
                      "(select count(*) from syncs) + (select count(*) from host_functions)")[0][0], len(gpu_rows))
check("csv api rows", q("select count(*) from api")[0][0], sum(1 for r in rows if r["kind"] == "api"))
check("csv nvtx rows", q("select count(*) from nvtx")[0][0], sum(1 for r in rows if r["kind"] == "nvtx"))
check("csv api durations", sorted(int(r["exec_ns"]) for r in rows if r["kind"] == "api"),
      sorted(v for (v,) in q("select end_ns - start_ns from api")))
check("csv host column", {r["host"] for r in rows}, {v for (v,) in q("select host from captures")})
# Host records whole, as dump lists them.
check("api rows", q("select count(*) from api")[0][0], sum(1 for l in dump if l.split()[1:2] == ["api"]))
check("nvtx rows", q("select count(*) from nvtx")[0][0] > 0, any(l.split()[1:2] == ["range"] for l in dump))
check("nccl rows", q("select count(*) from nccl")[0][0], sum(1 for l in dump if l.split()[1:2] == ["nccl"]))
check("unknown times are NULL, never 0", q("select count(*) from kernels where start_ns = 0 or queued_ns = 0")[0][0], 0)
check("launch joined to its API call", q("select count(*) from kernels k join api a on a.id = k.api_id "
                                          "where a.correlation_id != k.correlation_id")[0][0], 0)
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
done
# Where the output cannot go: one line, exit 2, no partial file claimed.
"$cli" export "$work/s.gpuh" --format sqlite -o /nonexistent/dir/x.db > /dev/null 2> "$work/err"
[[ $? == 2 ]] && grep -q "cannot write" "$work/err" && echo "ok   unwritable output: exit 2" || { echo "FAIL: unwritable: $(cat "$work/err")"; fails=$((fails + 1)); }
exit $((fails > 0))
