#!/usr/bin/env python3
"""scripts/bench's reporting: turns measurements into one table, a plot and docs/BENCHMARKS.md.

  report.py sysbench --streams=N --db_pid=P -- sysbench ... run
      runs sysbench and prints its figures as a RESULT line in load_bench's format.
  report.py seed --db_pid=P -- seedbench ... -mode M ...
      runs the seed's Go peer (../shared/seedgo) and prints its line as a RESULT line of mode
      seed (-mode message) or seedscan (-mode scan).
  report.py payload FILE
      prints payload_bench's figure from its JSON output.
  report.py render --results=F --meta=F [--docs=docs/BENCHMARKS.md --png=docs/benchmarks.png]
      prints the table; with --docs, rewrites the generated part of the docs and the plot.

A RESULT line is `RESULT key=value ...` (see bench/load_bench.cc); scripts/bench may append
phase=rss or phase=perf to runs that are not part of the main grid.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

# Mode order in the table and the plot: the references first, then writes, then reads.
MODES = ["raw", "health", "seed", "seedscan", "project", "batch", "hot", "redeliver", "scan",
         "wall", "senders", "capwall"]
# What a mode's OK replies should all say; anything else goes to the notes column.
EXPECTED_OUTCOMES = {
    "health": {"SERVING"},
    "project": {"PROJECTION_OUTCOME_PROJECTED"},
    "batch": {"PROJECTION_OUTCOME_PROJECTED"},
    "hot": {"PROJECTION_OUTCOME_PROJECTED"},
    "redeliver": {"PROJECTION_OUTCOME_ALREADY_PROJECTED"},
    "wall": {"items"},
    "senders": {"senders"},
    "capwall": {"at_cap"},
    "scan": {"found", "nothing_left"},
}
RSS_GOAL_MIB = 150.0
BEGIN_MARK = "<!-- bench:begin (scripts/bench rewrites everything up to bench:end) -->"
END_MARK = "<!-- bench:end -->"


# --- sysbench ------------------------------------------------------------------------------------


def proc_cpu_seconds(pid):
    """User + system CPU seconds of a process so far; 0 if there is none."""
    if pid <= 0:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()  # the name may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds():
    """CPU seconds the whole machine has used so far: /proc/stat less idle and iowait."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def histogram_percentiles(text):
    """p50/p90/p99/max from sysbench's --histogram (value | stars count)."""
    buckets = []
    for line in text.splitlines():
        m = re.match(r"^\s*([0-9.]+)\s+\|\**\s+([0-9]+)\s*$", line)
        if m:
            buckets.append((float(m.group(1)), int(m.group(2))))
    total = sum(c for _, c in buckets)
    result = {}
    for name, p in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99)):
        seen = 0
        result[name] = 0.0
        for value, count in buckets:
            seen += count
            if total and seen >= p * total:
                result[name] = value
                break
    result["max_ms"] = buckets[-1][0] if buckets else 0.0
    return result


def run_measured(command, db_pid, what, stderr=None):
    """Runs command: (its stdout, CPU seconds of the command, of the database, of the rest)."""
    before_client = resource.getrusage(resource.RUSAGE_CHILDREN)
    before_db = proc_cpu_seconds(db_pid)
    before_machine = machine_cpu_seconds()
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr or subprocess.PIPE,
                          text=True)
    after_machine = machine_cpu_seconds()
    after_db = proc_cpu_seconds(db_pid)
    after_client = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + (proc.stderr or ""))
        sys.exit(f"{what} failed")
    client_cpu = (after_client.ru_utime + after_client.ru_stime) - (
        before_client.ru_utime + before_client.ru_stime)
    db_cpu = after_db - before_db
    other_cpu = max(0.0, (after_machine - before_machine) - client_cpu - db_cpu)
    return proc.stdout, client_cpu, db_cpu, other_cpu


def run_sysbench(args):
    out, client_cpu, db_cpu, other_cpu = run_measured(args.command, args.db_pid, "sysbench")
    tx = re.search(r"transactions:\s+(\d+)\s+\(([0-9.]+) per sec", out)
    seconds = re.search(r"total time:\s+([0-9.]+)s", out)
    ignored = re.search(r"ignored errors:\s+(\d+)", out)
    if not tx or not seconds:
        sys.stderr.write(out)
        sys.exit("cannot read sysbench's output")
    secs = float(seconds.group(1))
    errors = int(ignored.group(1)) if ignored else 0
    fields = {
        "mode": "raw", "streams": args.streams, "client": "sysbench",
        "calls": tx.group(1), "events": tx.group(1), "seconds": f"{secs:.2f}",
        "rate": tx.group(2), "event_rate": tx.group(2),
    }
    fields.update({k: f"{v:.3f}" for k, v in histogram_percentiles(out).items()})
    fields.update({
        "failed": errors, "failures": f"SQL_ERRORS:{errors}" if errors else "none",
        "outcomes": "none", "cpu_client": f"{client_cpu / secs:.2f}", "cpu_server": "0.00",
        "cpu_db": f"{db_cpu / secs:.2f}", "cpu_other": f"{other_cpu / secs:.2f}",
        "server_rss_mib": "0",
        "server_hwm_mib": "0",
    })
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))


def run_seed(args):
    """seedbench's one `seed mode=... eps=...` line as a RESULT line. Its CPU (as the client's:
    the seed's process is both the load and the projection) is over the whole process, divided
    by the timed seconds; in scan mode that would include filling the outbox, so it is left out."""
    out, client_cpu, db_cpu, other_cpu = run_measured(args.command, args.db_pid, "seedbench",
                                                      stderr=sys.stderr)
    lines = [line for line in out.splitlines() if line.startswith("seed ")]
    if not lines:
        sys.stderr.write(out)
        sys.exit("seedbench printed no `seed ...` line")
    seed = dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)
    scan = seed["mode"] == "scan"
    secs = float(seed["seconds"])
    calls = seed["calls"] if scan else str(int(seed["events"]) + int(seed.get("not_claimed", 0))
                                           + int(seed["errors"]))
    errors = int(seed["errors"])
    fields = {
        "mode": "seedscan" if scan else "seed", "streams": seed["streams"], "client": "seedbench",
        "calls": calls, "events": seed["events"], "seconds": seed["seconds"],
        "rate": f"{int(calls) / secs:.1f}" if secs else "0", "event_rate": seed["eps"],
        "p50_ms": seed["p50_ms"], "p99_ms": seed["p99_ms"], "failed": errors,
        "failures": f"errors:{errors}" if errors else "none", "outcomes": "none",
        "exact": seed["exact"],
    }
    if scan:
        fields.update({"rows": seed["rows"], "left": seed["left"]})
    elif secs:
        fields.update({"cpu_client": f"{client_cpu / secs:.2f}", "cpu_db": f"{db_cpu / secs:.2f}",
                       "cpu_other": f"{other_cpu / secs:.2f}"})
    if seed.get("not_claimed", "0") != "0":
        fields["not_claimed"] = seed["not_claimed"]
    print("RESULT " + " ".join(f"{k}={v}" for k, v in fields.items()))


# --- the table -----------------------------------------------------------------------------------


def read_results(path):
    rows = []
    with open(path) as f:
        for line in f:
            if not line.startswith("RESULT "):
                continue
            row = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            row["streams"] = int(row["streams"])
            row.setdefault("phase", "main")
            rows.append(row)
    return rows


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                key, value = line.rstrip("\n").split("=", 1)
                meta[key] = value
    return meta


def num(row, key):
    try:
        return float(row[key])
    except (KeyError, ValueError):
        return None


def fmt_rate(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def fmt_x(a, b, what):
    if a is None or not b:
        return f"? {what}"
    return f"{a / b:.2f}x {what}"


def verdict(ok):
    return "met" if ok else "NOT MET"


class Table:
    """Rows of the one table, from the RESULT lines."""

    COLUMNS = ["mode", "streams", "calls/s", "events/s", "p50 ms", "p99 ms", "failures",
               "ratio", "CPU cli/srv/db/other", "srv peak MiB", "goal (at {g} streams)", "notes"]

    def __init__(self, rows, goal_streams):
        self.goal_streams = goal_streams
        self.by_key = {(r["mode"], r["streams"]): r for r in rows if r["phase"] == "main"}
        self.rss_rows = [r for r in rows if r["phase"] == "rss"]
        # A wall at the cap read by many streams, and small walls read beside it at once.
        self.cap_rows = [r for r in rows if r["phase"] == "cap"]
        # The same modes for an app keeping week and month walls, and for one keeping the
        # all-time wall only, back to back (DESIGN §2.15); each pair alternates over rounds, and
        # of each row's runs the one of median rate stands for it.
        self.period_rows = median_runs([r for r in rows
                                        if r["phase"] in ("alltime", "period", "sent")],
                                       lambda r: (r["mode"], r["phase"]))
        # GetGiftWall of walls without a catalogue, then of the same walls with a 300-gift one
        # and include_unlit (DESIGN §2.16), alternating in the same way.
        self.catalog_rows = median_runs([r for r in rows if r["mode"] == "wall"
                                         and r["phase"] in ("nocatalog", "unlit")],
                                        lambda r: r["phase"])
        # The same modes on a server reading its rows with JSON_TABLE and on one with the VALUES
        # path (--sql_rows), back to back.
        self.rows_path_rows = {(r["mode"], r["phase"]): r for r in rows
                               if r["phase"] in ("json_table", "values")}
        self.goals = []  # (goal text, met) at goal_streams, for the summary line

    def has_mode(self, mode):
        return any(m == mode for m, _ in self.by_key)

    def rate(self, mode, streams, key="event_rate"):
        row = self.by_key.get((mode, streams))
        return num(row, key) if row and "error" not in row else None

    def ratio(self, row):
        mode, s = row["mode"], row["streams"]
        if row["phase"] != "main":
            return ""  # no reference was measured at its stream count
        ev = num(row, "event_rate")
        if mode == "raw":
            return "reference"
        if mode == "health":
            return "reference of reads"
        if mode == "seed":
            return "peer of project, batch"
        if mode == "seedscan":
            return "peer of scan"
        if mode in ("project", "batch"):
            # The seed's rows are skipped where its code is absent: then no seed ratio at all.
            seed = (", " + fmt_x(ev, self.rate("seed", s), "seed")
                    if self.has_mode("seed") else "")
            return fmt_x(ev, self.rate("raw", s), "raw") + seed
        if mode == "scan":
            return (fmt_x(ev, self.rate("seedscan", s), "seedscan")
                    if self.has_mode("seedscan") else "")
        if mode in ("hot", "redeliver"):
            return (fmt_x(ev, self.rate("raw", s), "raw") + ", " +
                    fmt_x(ev, self.rate("project", s), "project"))
        if mode in ("wall", "senders"):
            return fmt_x(num(row, "rate"), self.rate("health", s, "rate"), "health")
        return ""

    def goal(self, row):
        mode, s = row["mode"], row["streams"]
        if s != self.goal_streams:
            return ""
        ev = num(row, "event_rate")
        raw, project = self.rate("raw", s), self.rate("project", s)
        health = self.rate("health", s, "rate")

        def check(text, value, reference, factor):
            ok = value is not None and bool(reference) and value >= factor * reference
            self.goals.append((f"{mode}: {text}", ok))
            return f"{text}: {verdict(ok)}"

        if mode == "project":
            return check(">= 0.5x raw", ev, raw, 0.5)
        if mode == "batch":
            return check(">= 3x raw (events/s)", ev, raw, 3.0)
        if mode == "hot":
            return check(">= 0.5x project", ev, project, 0.5)
        if mode == "redeliver":
            return check(">= 2x project", ev, project, 2.0)
        if mode == "wall":
            rate, p99 = num(row, "rate"), num(row, "p99_ms")
            ok_rate = rate is not None and bool(health) and rate >= 0.35 * health
            ok_p99 = p99 is not None and p99 <= 10.0
            self.goals.append(("wall: >= 0.35x health, p99 <= 10 ms", ok_rate and ok_p99))
            why = "" if ok_rate == ok_p99 else (" (rate)" if not ok_rate else " (p99)")
            return f">= 0.35x health, p99 <= 10 ms: {verdict(ok_rate and ok_p99)}{why}"
        return ""

    @staticmethod
    def notes(row):
        if "error" in row:
            return "load_bench gave no result: see the log"
        notes = []
        if row.get("exact", "yes") != "yes":
            notes.append("NOT EXACT: the wall or the ledger did not grow by the events counted")
        if row.get("left", "0") != "0":
            notes.append(f"{int(row['left']):,} of {int(row['rows']):,} rows left at the time cap")
        if row.get("not_claimed"):
            notes.append(f"{row['not_claimed']} calls not claimed")
        if len(row.get("runs", [])) > 1:
            key = rate_key(row)
            notes.append(f"median of {len(row['runs'])} runs, alternating: " + " / ".join(
                fmt_rate(num(run, key)) for run in row["runs"]) +
                (" calls/s" if key == "rate" else " events/s"))
        expected = EXPECTED_OUTCOMES.get(row["mode"])
        if expected and row.get("outcomes", "none") != "none":
            odd = [o for o in row["outcomes"].split(",") if o.split(":")[0] not in expected]
            if odd:
                notes.append("replies: " +
                             ",".join(o.replace("PROJECTION_OUTCOME_", "") for o in odd))
        return "; ".join(notes)

    def cells(self, row, goal, ratio=None):
        # A figure not measured is "-": the raw and seed rows have no server; seedscan's process
        # also filled its outbox, so its CPU is not the scan's.
        cpu = "/".join("-" if num(row, k) is None else f"{num(row, k):.2f}"
                       for k in ("cpu_client", "cpu_server", "cpu_db", "cpu_other"))
        if row["mode"] == "raw":
            cpu = cpu.replace("/0.00/", "/-/")
        hwm = num(row, "server_hwm_mib")
        wall = row["mode"] == "wall"
        label = {"rss": " (RSS run)", "cap": " (beside capwall)" if wall else "",
                 "alltime": " (all-time wall)" if wall else " (all-time app)",
                 "period": " (month wall)" if wall else " (week+month app)",
                 "sent": " (sent-wall app)",
                 "nocatalog": " (no catalogue)", "unlit": " (include_unlit, 300 gifts)",
                 "json_table": " (--sql_rows=json_table)", "values": " (--sql_rows=values)"}
        return [row["mode"] + label.get(row["phase"], ""),
                str(row["streams"]), fmt_rate(num(row, "rate")),
                fmt_rate(num(row, "event_rate")), fmt_ms(num(row, "p50_ms")),
                fmt_ms(num(row, "p99_ms")), row.get("failures", "-"),
                self.ratio(row) if ratio is None else ratio, cpu,
                f"{hwm:.0f}" if hwm else "-", goal, self.notes(row)]

    def body(self, streams):
        out = []
        for mode in MODES:
            for s in streams:
                row = self.by_key.get((mode, s))
                if row:
                    out.append(self.cells(row, self.goal(row)))
        for row in self.rss_rows:
            hwm = num(row, "server_hwm_mib") or 0
            ok = 0 < hwm <= RSS_GOAL_MIB
            self.goals.append((f"server RSS <= {RSS_GOAL_MIB:.0f} MiB at {row['streams']} streams",
                               ok))
            out.append(self.cells(row, f"RSS <= {RSS_GOAL_MIB:.0f} MiB: {verdict(ok)}"))
        for row in self.cap_rows:
            p99 = num(row, "p99_ms")
            ok = p99 is not None and p99 <= 10.0
            what = ("a wall at the cap" if row["mode"] == "capwall" else "small walls beside it")
            self.goals.append((f"{what}: p99 <= 10 ms at {row['streams']} streams", ok))
            out.append(self.cells(row, f"p99 <= 10 ms: {verdict(ok)}"))
        out += self.period_body()
        out += self.catalog_body()
        out += self.rows_path_body()
        return out

    # How far apart the two rows paths may be and still count as the same: this machine's noise
    # between two back-to-back runs of one mode.
    ROWS_PATH_NOISE = 0.15

    def rows_path_body(self):
        out = []
        for mode in ("project", "batch", "wall"):
            json_table = self.rows_path_rows.get((mode, "json_table"))
            values = self.rows_path_rows.get((mode, "values"))
            if json_table is None or values is None:
                continue
            key = "rate" if mode == "wall" else "event_rate"
            a, b = num(json_table, key), num(values, key)
            low = 1 - self.ROWS_PATH_NOISE
            ok = bool(a) and bool(b) and low <= b / a <= 1 / low
            text = f"within {self.ROWS_PATH_NOISE:.0%} of json_table"
            self.goals.append((f"{mode} on the VALUES rows path: {text}", ok))
            out.append(self.cells(json_table, "", "json_table"))
            out.append(self.cells(values, f"{text}: {verdict(ok)}", fmt_x(b, a, "json_table")))
        return out

    def catalog_body(self):
        bare, unlit = self.catalog_rows.get("nocatalog"), self.catalog_rows.get("unlit")
        if bare is None or unlit is None:
            return []
        text = ">= 0.8x without, p99 <= 10 ms"
        ok = ("error" not in bare and "error" not in unlit
              and ratio_at_least(unlit, bare, "rate", 0.8)
              and (num(unlit, "p99_ms") or float("inf")) <= 10.0)
        self.goals.append((f"wall with include_unlit over a 300-gift catalogue: {text}", ok))
        return [self.cells(bare, "", "no catalogue"),
                self.cells(unlit, f"{text}: {verdict(ok)}",
                           fmt_x(num(unlit, "rate"), num(bare, "rate"), "without"))]

    # Period walls: (mode, goal text, check of the period row against the all-time one).
    PERIOD_GOALS = [
        ("project", ">= 0.75x all-time", lambda p, a: ratio_at_least(p, a, "event_rate", 0.75)),
        ("batch", ">= 0.5x all-time (events/s)",
         lambda p, a: ratio_at_least(p, a, "event_rate", 0.5)),
        ("wall", "p99 as all-time's (within 20% or 1 ms)", lambda p, a: same_p99(p, a)),
    ]

    # The sent wall (DESIGN §2.19): the same, for an app keeping it.
    SENT_GOALS = [
        ("project", ">= 0.85x all-time", lambda p, a: ratio_at_least(p, a, "event_rate", 0.85)),
        ("batch", ">= 0.7x all-time (events/s)",
         lambda p, a: ratio_at_least(p, a, "event_rate", 0.7)),
    ]

    def period_body(self):
        out = []
        for phase, what, goals in (("period", "period walls", self.PERIOD_GOALS),
                                   ("sent", "the sent wall", self.SENT_GOALS)):
            for mode, text, check in goals:
                alltime = self.period_rows.get((mode, "alltime"))
                kept = self.period_rows.get((mode, phase))
                if alltime is None or kept is None:
                    continue
                ok = "error" not in alltime and "error" not in kept and check(kept, alltime)
                self.goals.append((f"{mode} of {what}: {text}", ok))
                key = "rate" if mode == "wall" else "event_rate"
                ratio = fmt_x(num(kept, key), num(alltime, key), "all-time")
                if phase == "period":
                    out.append(self.cells(alltime, "", "all-time only"))
                out.append(self.cells(kept, f"{text}: {verdict(ok)}", ratio))
        return out

    def header(self):
        return [c.format(g=self.goal_streams) for c in self.COLUMNS]


def rate_key(row):
    """What a row's rate is: calls for the reads, events for the writes."""
    return "rate" if row["mode"] in ("wall", "senders", "capwall", "health") else "event_rate"


def median_runs(rows, key_of):
    """Of the runs of each key (a paired row's rounds, in run order), the run of median rate,
    with all of them under "runs"."""
    runs = {}
    for row in rows:
        runs.setdefault(key_of(row), []).append(row)
    chosen = {}
    for key, of_key in runs.items():
        measured = [r for r in of_key if "error" not in r]
        if not measured:
            chosen[key] = of_key[-1]
            continue
        ranked = sorted(measured, key=lambda r: num(r, rate_key(r)) or 0.0)
        chosen[key] = dict(ranked[len(ranked) // 2], runs=of_key)
    return chosen


def ratio_at_least(row, reference, key, factor):
    value, ref = num(row, key), num(reference, key)
    return value is not None and bool(ref) and value >= factor * ref


def same_p99(row, reference):
    p99, ref = num(row, "p99_ms"), num(reference, "p99_ms")
    return p99 is not None and ref is not None and p99 <= max(1.2 * ref, ref + 1.0)


def text_table(header, body):
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    right = {1, 2, 3, 4, 5, 9}

    def line(r):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in body])


def markdown_table(header, body):
    def line(r):
        return "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"

    align = ["---" if i not in {1, 2, 3, 4, 5, 9} else "---:" for i in range(len(header))]
    return "\n".join([line(header), "|" + "|".join(align) + "|"] + [line(r) for r in body])


# --- the plot ------------------------------------------------------------------------------------


def plot(table, streams, png, subtitle):
    """Throughput against streams, one line per mode, with gnuplot."""
    styles = {
        "raw": 'lw 3 dt 2 lc rgb "black"', "health": 'lw 3 dt 2 lc rgb "gray50"',
        "project": 'lw 2 lc rgb "#1f77b4"', "batch": 'lw 2 lc rgb "#2ca02c"',
        "hot": 'lw 2 lc rgb "#d62728"', "redeliver": 'lw 2 lc rgb "#9467bd"',
        "wall": 'lw 2 lc rgb "#ff7f0e"', "senders": 'lw 2 lc rgb "#8c564b"',
        "capwall": 'lw 2 lc rgb "#17becf"',
        "seed": 'lw 2 dt 3 lc rgb "#1f77b4"', "seedscan": 'lw 2 dt 3 lc rgb "#bcbd22"',
        "scan": 'lw 2 lc rgb "#bcbd22"',
    }
    titles = {
        "raw": "raw: sysbench oltp_insert (tx/s)", "health": "health: Health/Check",
        "project": "project: ProjectMessage", "batch": "batch: ProjectMessages x100 (events/s)",
        "hot": "hot: one wall", "redeliver": "redeliver: duplicates",
        "wall": "wall: GetGiftWall", "senders": "senders: ListGiftWallSenders",
        "capwall": "capwall: a wall at the cap",
        "seed": "seed: the seed's ProjectGiftWallMessage (Go)",
        "seedscan": "seedscan: the seed's ProjectPendingGiftWallEvents (events/s)",
        "scan": "scan: RunCatchUp (events/s)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        plots, values = [], []
        for mode in MODES:
            points = [(s, table.rate(mode, s)) for s in streams]
            points = [(s, v) for s, v in points if v]
            if not points:
                continue
            values += [v for _, v in points]
            data = os.path.join(tmp, mode + ".dat")
            with open(data, "w") as f:
                f.writelines(f"{s} {v}\n" for s, v in points)
            plots.append(f'"{data}" using 1:2 with linespoints {styles[mode]} pt 7 ps 1.2 '
                         f'title "{titles[mode]}"')
        if not plots:
            return
        script = "\n".join([
            f'set terminal pngcairo size 1000,700 noenhanced font "sans,11"',
            f'set output "{png}"',
            'set title "giftwall throughput against concurrent streams '
            f'(events/s for writes, calls/s for reads)\\n{subtitle}"',
            'set xlabel "concurrent streams"',
            'set ylabel "per second (log scale)"',
            "set logscale xy",
            "set xtics (" + ", ".join(f'"{s}" {s}' for s in streams) + ")",
            f"set xrange [{min(streams) / 1.5}:{max(streams) * 1.5}]",
            # Room above the lines for the key.
            f"set yrange [{min(values) / 2}:{max(values) * 8}]",
            "set format y \"%.0s%c\"",
            "set grid xtics ytics mytics",
            "set key top left inside box opaque maxrows 4 samplen 3",
            "plot " + ", \\\n     ".join(plots),
        ])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


# --- docs/BENCHMARKS.md --------------------------------------------------------------------------

DOC_TEMPLATE = """# Benchmarks

How fast the projection and the reads are, each against what the same machine does without
giftwall: the database's own durable inserts, and gRPC's own health check. The goals below are
targets to steer by, never test assertions.

## Running them

```sh
scripts/bench                     # 10s a measurement at 1, 16 and 64 streams: about 6 minutes
scripts/bench --duration=3s       # a quick look (about 2 minutes)
scripts/bench --streams=1,4,16,64 --rss_streams=512
scripts/bench -- --workers=32 --db_pool_size=32   # server flags after --, to compare settings
GIFTWALL_BENCH_SERVER_ARGS='--workers=32' scripts/bench
scripts/bench --perf              # also profiles the server: docs/perf-project.txt
scripts/bench --no_docs           # print the table, leave docs/ alone
```

It installs what is missing (the build's Debian packages, `sysbench`, `gnuplot-nox`, and
`linux-perf` with `--perf`), builds Release into `build-bench/` (with frame pointers, so that a
profile has call stacks; they cost about 1%), runs `payload_bench` (Google Benchmark), starts a
throwaway MariaDB with durable commits (`innodb_flush_log_at_trx_commit=1`, the default; no
binary log) and `giftwall-server` on it with its default flags (plus any given), then measures:

| row | what | compared with |
|---|---|---|
| raw | `sysbench oltp_insert`: single-row autocommit inserts into one table, at the same concurrency (connections), against the same MariaDB, before the server starts | the database's own limit of durable commits |
| health | `grpc.health.v1.Health/Check` of service `""` (answered from memory) through the same load client | the gRPC stack's own limit |
| project | `ProjectMessage`, each a new `WalletGiftDebited` event over 1,000 walls, 20 gifts, 5,000 senders | raw |
| batch | `ProjectMessages` of 100 new events a call: calls/s are batches/s | raw, in events/s |
| hot | `ProjectMessage` of new events all to one wall: 5 gifts, 1,000 senders | raw and project |
| redeliver | `ProjectMessage` of events already projected: each stream first projects its 200 events (in batches, not measured), then cycles through them | raw and project |
| wall | `GetGiftWall` of a random user of the 1,000 whose walls project and batch filled (up to 20 gifts each), default page size | health |
| senders | `ListGiftWallSenders` of one of the hot wall's 5 gifts (up to 1,000 senders each, filled by hot), default page size | health |
| seed | the peer: the seed's own Go code (`../shared/seedgo`, its functions verbatim), its `ProjectGiftWallMessage` called with a new `WalletGiftDebited` event per call from each stream (1,000 walls, 20 gifts, 5,000 senders, as project), by `seedbench -mode message` as a child process against the same MariaDB, on a database and schema of its own (`giftwall_seed`) | the peer of project and batch: their ratio column says `Nx seed` |
| seedscan | the seed's catch-up scan, `ProjectPendingGiftWallEvents(limit 100)`, from each stream over a backlog of 20,000 outbox rows (`--scan_rows`) inserted first, not measured (`seedbench -mode scan`), until nothing is left or `--duration` has passed | the peer of scan |
| scan | our catch-up scan, `ProjectionAdminService/RunCatchUp` (limit 100: one pass of the seed's ProjectPendingGiftWallEvents), from each stream over the same kind of backlog (20,000 rows inserted first under an app of its own per stream count), until a pass finds nothing or `--duration` has passed; on a server of its own, started with `--enable_admin --catchup_interval=0` | seedscan: `Nx seedscan` |
| capwall | `GetGiftWall` of one wall at the cap (1,000 gifts, filled first, not measured), each stream in one of the four orders, default page size: run once, at 32 streams, while 16 streams of `wall` read small walls beside it | p99 <= 10 ms, both |
| project, batch (week+month app) | `project` and `batch` at 16 streams for an app that keeps week and month walls in Asia/Shanghai (`SetAppSettings`), so that each event also writes a week and a month wall row and sender row (DESIGN §2.15), run right after the same modes for an app that keeps the all-time wall only (`(all-time app)`) | the all-time app: `project` >= 0.75x, `batch` >= 0.5x in events/s |
| project, batch (sent-wall app) | the same modes at 16 streams for an app that keeps the sent wall (`SetAppSettings keep_sent_wall`), so that each group also merges its senders' sent rows (DESIGN §2.19), run right after the week+month app's | the all-time app: `project` >= 0.85x, `batch` >= 0.7x in events/s |
| wall (month wall) | `GetGiftWall` with `period: "month"` of the week+month app's walls (filled by the two rows above), run right after `wall (all-time wall)`: the same walls read all-time | p99 as all-time's (within 20% or 1 ms) |

Each mode runs at each stream count, mode by mode in the order of the table; then `project` once
more at 256 streams for the server's memory (after the period rows); then `scan` on a server of its own; then the seed's
rows (skipped, with a line saying why, where `../shared/seedgo` is absent or does not build). A stream is a closed loop on a channel (an HTTP/2
connection) of its own: it sends its next call when the last one answers. A ratio compares rates
at the same number of streams. CPU is in cores (the machine has 2) used during the measurement
by the load client, the server, MariaDB and everything else on the machine (`other`: anything
but 0 means the figures are skewed). "srv peak MiB" is the server's VmHWM (peak RSS) after that
measurement. "notes" lists replies a mode should not get (e.g. `LEASED`, or empty walls).

Goals, read at 16 streams and marked met or not in the table's last columns: `project` >= 0.5x
raw; `batch` >= 3x raw in events/s; `hot` >= 0.5x project; `redeliver` >= 2x project; `wall`
>= 0.35x health with p99 <= 10 ms; the server's peak RSS <= 150 MiB after the 256-stream run;
the period and sent-wall rows' goals above.

The load client (`bench/load_bench.cc`) uses gRPC's callback API (`--client=callback`, the
default): measured both ways here (3 s runs at 16, 64 and 256 streams against one server), the
sync client (`--client=sync`: a thread per stream, blocking calls) got 25 to 33% fewer health
checks through (8,100 to 8,300/s against 10,700 to 11,700/s, on about one core of client CPU
either way) and spent 15 to 45% more client CPU per write or wall read: CPU that the server and
MariaDB need on 2 cores. The sync client is kept to compare.

{results}

## Where the time goes

To be written from profiles of the server: `scripts/bench --perf` records the server during an
extra `project` run at 16 streams and writes the top of `perf report` to
[perf-project.txt](perf-project.txt) (the whole profile stays in `build-bench/perf-project.data`).
"""


def results_block(table_md, meta, table, png_name, statements_md=""):
    met = sum(1 for _, ok in table.goals if ok)
    lines = [
        BEGIN_MARK,
        "## Results",
        "",
        f"Measured {meta.get('date', '?')} at commit {meta.get('commit', '?')}, "
        f"{meta.get('duration', '?')} a measurement, load client `--client="
        f"{meta.get('client', '?')}`, server flags: "
        f"{('`' + meta['server_args'] + '`') if meta.get('server_args') else 'defaults'}.",
        "",
        f"- machine: {meta.get('nproc', '?')} cores ({meta.get('cpu', '?')}), "
        f"{meta.get('memory', '?')} memory, Linux {meta.get('kernel', '?')}, database files on "
        f"{meta.get('fs', '?')}; load average {meta.get('loadavg', '?')} at the start "
        "(anything else running skews every figure)",
        f"- database: MariaDB {meta.get('mariadb', '?')}, innodb_flush_log_at_trx_commit="
        f"{meta.get('flush_log', '?')}, binary log off, "
        f"{meta.get('buffer_pool_mib', '?')} MiB buffer pool",
        f"- goals at {table.goal_streams} streams: {met} of {len(table.goals)} met",
    ]
    if meta.get("payload"):
        lines.append(f"- payload parsing (payload_bench): {meta['payload']}")
    if meta.get("rss_before_mib"):
        lines.append(f"- server peak RSS before the {meta.get('rss_streams', '?')}-stream run: "
                     f"{float(meta['rss_before_mib']):.0f} MiB")
    if meta.get("seed"):
        lines.append(f"- the seed's rows: {meta['seed']}")
    if meta.get("rows"):
        lines.append(f"- left in the database: {meta['rows']}")
    if meta.get("warning"):
        lines.append(f"- **warning**: {meta['warning']}")
    lines += ["", table_md, "", f"![throughput against streams]({png_name})", ""]
    if statements_md:
        lines += [
            "### What a group costs the database",
            "",
            "`bench/group_bench`: MariaDB's CPU (microseconds, from /proc) around each statement "
            "of a group of new events, as the projector runs them, by group size; then the same "
            "with the wall's four sort indexes (dropped by migration 0004) re-created; then with "
            "each event also folded into its week and month (DESIGN §2.15: a wall row and a "
            "sender row per period, in the same statements), as for an app keeping both.",
            "",
            statements_md.strip(),
            "",
        ]
    lines.append(END_MARK)
    return "\n".join(lines)


def write_docs(path, block):
    if os.path.exists(path):
        with open(path) as f:
            doc = f.read()
        start, end = doc.find(BEGIN_MARK), doc.find(END_MARK)
        if start >= 0 and end > start:
            doc = doc[:start] + block + doc[end + len(END_MARK):]
        else:
            doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    else:
        doc = DOC_TEMPLATE.replace("{results}", block)
    with open(path, "w") as f:
        f.write(doc)


def interference(rows):
    """A warning if something besides the client, the server and MariaDB took CPU, or ''."""
    busy = [r for r in rows if r["phase"] != "perf" and (num(r, "cpu_other") or 0) >= 0.2]
    if not busy:
        return ""
    worst = max(num(r, "cpu_other") for r in busy)
    return (f"other processes used >= 0.2 cores during {len(busy)} of {len(rows)} measurements "
            f"(up to {worst:.2f}; column CPU, last figure): those figures are skewed")


def render(args):
    rows = read_results(args.results)
    meta = read_meta(args.meta)
    meta["warning"] = "; ".join(w for w in (meta.get("warning"), interference(rows)) if w)
    streams = [int(s) for s in meta.get("streams", "1,16,64").split(",")]
    table = Table(rows, args.goal_streams)
    body = table.body(streams)
    header = table.header()
    met = sum(1 for _, ok in table.goals if ok)
    print(f"giftwall benchmark: {meta.get('nproc', '?')} cores ({meta.get('cpu', '?')}), "
          f"MariaDB {meta.get('mariadb', '?')} with innodb_flush_log_at_trx_commit="
          f"{meta.get('flush_log', '?')}, {meta.get('duration', '?')} a measurement, "
          f"client={meta.get('client', '?')}, "
          f"server flags: {meta.get('server_args') or 'defaults'}")
    print(text_table(header, body))
    print(f"goals at {args.goal_streams} streams: {met} of {len(table.goals)} met"
          + (f"; payload parsing: {meta['payload']}" if meta.get("payload") else ""))
    if meta.get("warning"):
        print(f"warning: {meta['warning']}")
    if args.docs:
        plot(table, streams, args.png,
             f"{meta.get('nproc', '?')} cores, MariaDB {meta.get('mariadb', '?').split('-')[0]} "
             f"with durable commits, {meta.get('duration', '?')} a point, {meta.get('date', '?')}")
        statements = ""
        if args.statements and os.path.exists(args.statements):
            with open(args.statements) as f:
                statements = f.read()
        block = results_block(markdown_table(header, body), meta, table,
                              os.path.relpath(args.png, os.path.dirname(args.docs)), statements)
        write_docs(args.docs, block)


def payload(path):
    """One line from payload_bench's JSON output."""
    with open(path) as f:
        b = json.load(f)["benchmarks"][0]
    print(f"{b['cpu_time']:.0f} {b['time_unit']} a payload "
          f"({b['bytes_per_second'] / 2**20:.0f} MiB/s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command_name", required=True)
    sb = sub.add_parser("sysbench")
    sb.add_argument("--streams", type=int, required=True)
    sb.add_argument("--db_pid", type=int, default=0)
    sb.add_argument("command", nargs=argparse.REMAINDER)
    sd = sub.add_parser("seed")
    sd.add_argument("--db_pid", type=int, default=0)
    sd.add_argument("command", nargs=argparse.REMAINDER)
    rd = sub.add_parser("render")
    rd.add_argument("--results", required=True)
    rd.add_argument("--meta", required=True)
    rd.add_argument("--goal_streams", type=int, default=16)
    rd.add_argument("--docs")
    rd.add_argument("--png")
    rd.add_argument("--statements", help="group_bench's markdown table, to include")
    pl = sub.add_parser("payload")
    pl.add_argument("json")
    args = parser.parse_args()
    if args.command_name in ("sysbench", "seed"):
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        (run_sysbench if args.command_name == "sysbench" else run_seed)(args)
    elif args.command_name == "payload":
        payload(args.json)
    else:
        if args.docs and not args.png:
            parser.error("--docs needs --png")
        render(args)


if __name__ == "__main__":
    main()
