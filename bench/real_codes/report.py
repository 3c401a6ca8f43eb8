#!/usr/bin/python3
"""Reads one code's results of bench/real_codes.sh and prints its times, its
checks (issue 29's "Done when", the code's own timers against rtrace's) and one
summary row.

    report.py sweep CODE DIR SUMMARY_TSV   # after the plain runs and the sweep
    report.py cost CODE DIR                # after --cost runs

DIR holds plain-r1/, plain-r2/ (time.txt, out.txt), sweep/ (run.h5, sweep.log
with an epoch time before every line of rtrace's stderr, a.json, a.txt) and, for
--cost, cost-*/. Needs Debian's python3-h5py (/usr/bin/python3).
"""
import glob
import json
import math
import os
import re
import sys

import h5py

# Modules of the MPI library, its transports and runtime: counts there are the
# runtime's work (progress engine, polling), not the application's (issue 29).
RUNTIME_MODULE = re.compile(r"^(libmpi|libopen-pal|libopen-rte|libopen-orted|mca_|libpmix|libevent|libhwloc|"
                            r"libucp|libucs|libuct|libfabric|libpsm|libmca_)")


def fnum(x, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def read_time(path):
    """/usr/bin/time -f '%e %U %S' output: (wall, cpu)."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    try:
                        return float(parts[0]), float(parts[1]) + float(parts[2])
                    except ValueError:
                        pass
    except OSError:
        pass
    return None, None


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# ------------------------------------------------------------------ run file


class RunFile:
    def __init__(self, path):
        self.path = path
        self.f = h5py.File(path, "r")
        self.points = {}  # ranks -> point group name
        self.wall = {}  # ranks -> timed wall s (rtrace's record)
        for row in self.f["/sweep/points"][()]:
            ranks = int(row["ranks"])
            self.points[ranks] = "p%06d" % int(row["point_id"])
            self.wall[ranks] = float(row["wall_s"])

    def group(self, ranks):
        return self.f["/points/" + self.points[ranks]]

    def stdout(self, ranks):
        g = self.group(ranks)
        if "stdout" not in g:
            return ""
        v = g["stdout"][()]
        return v.decode(errors="replace") if isinstance(v, bytes) else str(v)

    def attr(self, ranks, name, default=""):
        v = self.group(ranks).attrs.get(name, default)
        return v.decode() if isinstance(v, bytes) else v

    def cpu(self, ranks):
        """CPU seconds (user + system) of the timed run's ranks, as the tracer recorded them."""
        total, n = 0.0, 0
        g = self.group(ranks)["ranks"]
        for name in g:
            if "info" in g[name]:
                info = g[name]["info"][()]
                if len(info) and info[0]["user_s"] >= 0:
                    total += float(info[0]["user_s"]) + float(info[0]["system_s"])
                    n += 1
        return total if n else None

    def counts_wall(self, ranks):
        """The counting run's wall seconds as `rtrace counts` recorded them (rank 0)."""
        g = self.group(ranks)["ranks"]
        for name in sorted(g):
            if "counts_info" in g[name]:
                info = g[name]["counts_info"][()]
                if len(info):
                    return float(info[0]["wall_s"]), info[0]["status"].decode()
        return None, "absent"


def counts_split(rank_groups):
    """Sums of the count rows of the given rank groups: total and the MPI runtime's part."""
    out = {"instructions": 0.0, "flops": 0.0, "l1": 0.0, "rt_instructions": 0.0, "rt_flops": 0.0, "rt_l1": 0.0,
           "ranks": 0}
    flop_cols = None
    for g in rank_groups:
        if "counts" not in g:
            continue
        out["ranks"] += 1
        rows = g["counts"][()]
        names = [n.decode(errors="replace") if isinstance(n, bytes) else str(n) for n in g["names"][()]]
        if flop_cols is None:
            flop_cols = [c for c in rows.dtype.names if c.startswith("flops_") and c != "flops_unsplit"]
        for r in rows:
            ins = float(r["instructions"])
            fl = sum(float(r[c]) for c in flop_cols)
            l1 = float(r["bytes_l1_read"]) + float(r["bytes_l1_write"])
            mid = int(r["module_id"])
            module = os.path.basename(names[mid]) if 0 <= mid < len(names) else ""
            out["instructions"] += ins
            out["flops"] += fl
            out["l1"] += l1
            if RUNTIME_MODULE.match(module):
                out["rt_instructions"] += ins
                out["rt_flops"] += fl
                out["rt_l1"] += l1
    return out


# ------------------------------------------------------------ sweep log times


def sweep_times(log_path):
    """From the time-stamped stderr of the sweep: per ranks value, the counting
    pass (its start note to its result note) and what follows it until the
    point's progress line (the ERT of the partition, when measured, and the
    commit). Also the sweep's total and its exit line."""
    lines = []
    for line in read_text(log_path).splitlines():
        stamp, _, text = line.partition(" ")
        try:
            lines.append((float(stamp), text))
        except ValueError:
            continue
    res = {"total": None, "exit": None, "count_start": {}, "count_end": {}, "point_end": {}, "point_start": {},
           "remeasured": 0, "lines": [t for _, t in lines]}
    if not lines:
        return res
    t0 = lines[0][0]
    res["total"] = lines[-1][0] - t0
    prev_end = t0
    for t, text in lines:
        m = re.search(r"point ranks=(\d+): counting pass under Valgrind", text)
        if m:
            res["count_start"][int(m.group(1))] = t
            res["point_start"].setdefault(int(m.group(1)), prev_end)
            continue
        m = re.search(r"point ranks=(\d+): counting pass (ok|not ok|failed|interrupted)", text)
        if m:
            res["count_end"][int(m.group(1))] = t
            continue
        m = re.search(r"\[\d+/\d+\] ranks=(\d+): ", text)
        if m:
            r = int(m.group(1))
            res["point_end"][r] = t
            res["point_start"].setdefault(r, prev_end)
            prev_end = t
            continue
        if "re-measuring" in text:
            res["remeasured"] += 1
        m = re.match(r"exit (\d+)", text)
        if m:
            res["exit"] = int(m.group(1))
    return res


# ------------------------------------------------------------- own timers


def lammps_timers(text):
    """Loop time and the task timing breakdown (avg seconds per section)."""
    out = {}
    m = re.search(r"Loop time of ([0-9.eE+-]+) on (\d+) procs", text)
    if m:
        out["Loop"] = float(m.group(1))
    for sec in ("Pair", "Neigh", "Comm", "Output", "Modify", "Other"):
        m = re.search(r"^%s\s*\|\s*([0-9.eE+-]+)?\s*\|\s*([0-9.eE+-]+)" % sec, text, re.M)
        if m:
            out[sec] = float(m.group(2))
    return out


def gromacs_timers(text):
    out = {}
    m = re.search(r"^\s*Total\s+([0-9.]+)\s+100\.0\s*$", text, re.M)
    if m:
        out["Mflops"] = float(m.group(1))
    m = re.search(r"^\s*Time:\s+([0-9.]+)\s+([0-9.]+)", text, re.M)
    if m:
        out["Wall"] = float(m.group(2))
    m = re.search(r"^Performance:\s+([0-9.]+)", text, re.M)
    if m:
        out["ns/day"] = float(m.group(1))
    # The cycle accounting: seconds of the force and PME parts (summed over ranks).
    for name, key in (("Force", "Force"), ("PME mesh", "PME mesh"), ("Comm. coord.", "Comm. coord."),
                      ("Neighbor search", "Neighbor search")):
        m = re.search(r"^\s*%s\s+\d+\s+\d+\s+\d+\s+([0-9.]+)" % re.escape(name), text, re.M)
        if m:
            out[key] = float(m.group(1))
    return out


def qe_timers(text):
    out = {}
    for m in re.finditer(r"^\s+(\w+)\s+:\s+([0-9.]+)s CPU\s+([0-9.]+)s WALL", text, re.M):
        out.setdefault(m.group(1), float(m.group(3)))
    m = re.search(r"PWSCF\s+:\s+(?:(\d+)m\s*)?([0-9.]+)s CPU\s+(?:(\d+)m\s*)?([0-9.]+)s WALL", text)
    if m:
        out["PWSCF"] = float(m.group(3) or 0) * 60 + float(m.group(4))
    return out


def hpcc_timers(text):
    out = {}
    for key in ("HPL_Tflops", "HPL_time", "HPL_N", "StarDGEMM_Gflops", "SingleDGEMM_Gflops", "DGEMM_N",
                "StarSTREAM_Triad", "CommWorldProcs", "Success", "Failure"):
        m = re.search(r"^%s=([0-9.eE+-]+)" % key, text, re.M)
        if m:
            out[key] = float(m.group(1))
    return out


def own_timers(code, text):
    return {"lammps": lammps_timers, "gromacs": gromacs_timers, "qe": qe_timers, "hpcc": hpcc_timers}[code](text)


def timed_output(code, run, ranks, sweep_dir):
    """The timed run's own output: stdout kept in the run file, except GROMACS,
    whose md.log the counting run (same -deffnm) backs up as #md-rN.log.1#."""
    if code == "gromacs":
        backup = os.path.join(sweep_dir, "#md-r%d.log.1#" % ranks)
        if os.path.exists(backup):
            return read_text(backup), "the timed run's md-r%d.log (backed up by the counting run)" % ranks
        return read_text(os.path.join(sweep_dir, "md-r%d.log" % ranks)), "md-r%d.log (no counting run after it)" % ranks
    return run.stdout(ranks), "the timed run's stdout (run file)"


# ----------------------------------------------------------------- checks


class Checks:
    def __init__(self, code):
        self.code = code
        self.results = []

    def add(self, verdict, name, text):
        self.results.append((verdict, name, text))
        print(f"  {verdict:<5} {name}: {text}")

    def count(self, verdict):
        return sum(1 for v, _, _ in self.results if v == verdict)


def kernel_points(analysis, pattern):
    """(kernel, {label: point}) of the kernels whose name matches pattern."""
    out = []
    for k in analysis.get("kernels", []):
        if re.search(pattern, k.get("name", "")):
            out.append((k, {p["label"]: p for p in k.get("points", [])}))
    return out


def value(d):
    return d.get("value") if isinstance(d, dict) else d


def step_causes(analysis):
    """Per step (c1, c2) of the summary: the ordered causes."""
    out = {}
    for s in analysis.get("summary", []):
        for st in s.get("steps", []):
            causes = [c.get("cause") for c in st.get("causes", []) if c.get("cause")]
            if not causes and st.get("cause"):
                causes = [st["cause"]]
            out[(st.get("c1"), st.get("c2"))] = (st.get("diagnosis"), causes)
    return out


def check_registers(chk, text, analysis):
    hits = [l.strip() for l in text.splitlines() if re.search(r"\bregisters\b", l, re.I)]
    in_json = False
    for t in analysis.get("trajectories", []):
        for st in t.get("steps", []):
            if str(st.get("level", "")).lower() == "registers" or "registers" in str(st.get("explanation", "")):
                in_json = True
    if hits or in_json:
        chk.add("FAIL", "no level named registers", f"{len(hits)} text line(s), e.g. `{hits[0][:110]}`" if hits
                else "the JSON names a step's level `registers`")
    else:
        chk.add("PASS", "no level named registers", "neither the text nor the JSON names one")


def check_capacity_vs_mpi(chk, analysis):
    steps = step_causes(analysis)
    bad, seen = [], []
    for t in analysis.get("trajectories", []):
        for st in t.get("steps", []):
            if st.get("diagnosis") != "cache-capacity":
                continue
            key = (st.get("c1"), st.get("c2"))
            diag, causes = steps.get(key, (None, []))
            own = [c for c in causes if c != "machine-load"]
            first = own[0] if own else None
            where = f"{t.get('kernel')} at {key[0]:g}->{key[1]:g} (level {st.get('level') or st.get('cache')})"
            seen.append(where)
            if first == "mpi":
                bad.append(where + f"; summary causes {causes}")
    if bad:
        chk.add("FAIL", "no cache-capacity where the summary says mpi",
                f"{len(bad)} step(s): " + "; ".join(bad[:4]) +
                " (the counts have no MPI bucket yet to show a capacity loss outside it: issue 29 item 2)")
    elif seen:
        chk.add("INFO", "no cache-capacity where the summary says mpi",
                "cache-capacity only at steps whose first cause is not mpi: " + "; ".join(seen[:4]))
    else:
        causes = ", ".join(f"{k[0]:g}->{k[1]:g}: {v[1]}" for k, v in steps.items())
        chk.add("PASS", "no cache-capacity where the summary says mpi", f"no cache-capacity step (summary: {causes})")


def check_gemm(chk, code, analysis, text):
    if code not in ("hpcc", "qe"):
        return
    kind = "dgemm" if code == "hpcc" else "zgemm"
    counted = kernel_points(analysis, r"%s_kernel" % kind)
    sampled = [f for f in analysis.get("profile", {}).get("functions", [])
               if re.search(r"%s_kernel" % kind, f.get("name", ""))]
    samp_txt = ", ".join(f"{f.get('short_name') or f['name']} {['%.2f' % (x or 0) for x in f.get('time_s', [])]} s"
                         for f in sampled) or "none"
    cnt_txt = ", ".join(k["name"] for k, _ in counted) or "none"
    chk.add("INFO", f"{kind} kernels", f"sampled (timed run): {samp_txt}; counted: {cnt_txt}")
    false_claim = [l.strip() for l in text.splitlines()
                   if "no sampled time" in l and re.search(r"%s_kernel|gemm" % kind, l, re.I)]
    if not counted:
        mismatch = [l.strip() for l in text.splitlines() if re.search(r"%s_kernel" % kind, l) and
                    re.search(r"other code|mismatch|picked|not the timed", l, re.I)]
        verdict = "PASS" if mismatch else "FAIL"
        chk.add(verdict, f"{kind.upper()} gets a rate or the kernel mismatch sentence",
                mismatch[0][:160] if mismatch else "no counted GEMM kernel and no sentence about it")
        return
    for k, pts in counted:
        rates = {lab: value(p.get("performance")) for lab, p in pts.items()}
        if all(r is not None for r in rates.values()) and rates:
            chk.add("PASS", f"{kind.upper()} gets a rate or the kernel mismatch sentence",
                    f"{k['name']}: " + ", ".join(f"{lab} {fnum(r)} GFLOP/s" for lab, r in rates.items()))
            continue
        mismatch = [l.strip() for l in text.splitlines() if k["name"] in l and
                    re.search(r"other code|mismatch|picked|not the timed|counted .* timed", l, re.I)]
        if mismatch:
            chk.add("PASS", f"{kind.upper()} gets a rate or the kernel mismatch sentence", mismatch[0][:160])
        else:
            claim = f"; the report says `{false_claim[0][:120]}`" if false_claim else ""
            chk.add("FAIL", f"{kind.upper()} gets a rate or the kernel mismatch sentence",
                    f"{k['name']}: rates {', '.join(f'{lab} {fnum(r)}' for lab, r in rates.items())}, "
                    f"no sentence naming the timed kernel{claim}")


def app_flops(analysis):
    out = {}
    for k in analysis.get("kernels", []):
        if k.get("kind") == "application":
            for p in k.get("points", []):
                out[p["label"]] = (value(p.get("flops")), value(p.get("time")), value(p.get("performance")))
    return out


def function_time(analysis, pattern):
    """Per label: the counted/placed function's time (kernels) or else the sampled time (profile)."""
    for k, pts in kernel_points(analysis, pattern):
        return k["name"], {lab: value(p.get("time")) for lab, p in pts.items()}
    labels = [c["label"] for c in analysis.get("configurations", [])]
    for f in analysis.get("profile", {}).get("functions", []):
        if re.search(pattern, f.get("name", "")):
            return f.get("short_name") or f["name"], dict(zip(labels, f.get("time_s", [])))
    return None, {}


def check_own_timers(chk, code, analysis, own, run):
    labels = {c["ranks"]: c["label"] for c in analysis.get("configurations", [])}
    apps = app_flops(analysis)
    cfg_time = {c["label"]: value(c.get("app_time")) for c in analysis.get("configurations", [])}
    for r in sorted(own):
        o = own[r]
        lab = labels.get(r, f"ranks={r}")
        fl, t, perf = apps.get(lab, (None, None, None))
        chk.add("INFO", f"own timers at {lab}",
                ", ".join(f"{k} {fnum(v)}" for k, v in o.items() if not k.startswith("_")) +
                f" | rtrace: window {fnum(cfg_time.get(lab))} s, timed wall {fnum(run.wall.get(r))} s, "
                f"counted FLOPs {fnum(fl)}, app {fnum(perf)} GFLOP/s")
    if len(own) < 2 or 1 not in own or 2 not in own:
        chk.add("INFO", "own timers vs rtrace", "cannot compare: the code's own output of both points is missing")
        return
    o1, o2 = own[1], own[2]
    l1, l2 = labels.get(1), labels.get(2)
    if code == "lammps":
        name, ft = function_time(analysis, r"PairLJCut::compute")
        if "Pair" in o1 and "Pair" in o2 and ft.get(l1) and ft.get(l2):
            own_s = o1["Pair"] / o2["Pair"]
            rt_s = ft[l1] / ft[l2]
            verdict = "PASS" if abs(rt_s / own_s - 1) <= 0.15 else "FAIL"
            chk.add(verdict, "LAMMPS Pair speedup: own timer vs rtrace",
                    f"LAMMPS Pair {o1['Pair']:.3g} -> {o2['Pair']:.3g} s ({own_s:.2f}x); rtrace {name} "
                    f"{ft[l1]:.3g} -> {ft[l2]:.3g} s ({rt_s:.2f}x); tolerance 15%")
        else:
            chk.add("INFO", "LAMMPS Pair speedup: own timer vs rtrace", f"missing: LAMMPS Pair or rtrace's {name}")
        if "Loop" in o1 and cfg_time.get(l1):
            chk.add("INFO", "LAMMPS Loop time vs rtrace's MPI window",
                    f"{o1['Loop']:.3g}/{fnum(cfg_time.get(l1))} s at {l1}, {o2.get('Loop', float('nan')):.3g}/"
                    f"{fnum(cfg_time.get(l2))} s at {l2} (the window includes setup before the loop)")
    elif code == "gromacs":
        for r, o, lab in ((1, o1, l1), (2, o2, l2)):
            fl = apps.get(lab, (None,))[0]
            if "Mflops" in o and fl:
                chk.add("INFO", f"GROMACS flop accounting vs counted at {lab}",
                        f"GROMACS {o['Mflops'] * 1e6:.3e} FLOPs (its per-interaction estimate), counted "
                        f"{fl:.3e} ({fl / (o['Mflops'] * 1e6):.2f}x)")
        f1, f2 = apps.get(l1, (None,))[0], apps.get(l2, (None,))[0]
        if f1 and f2 and "Mflops" in o1 and "Mflops" in o2:
            own_r = o2["Mflops"] / o1["Mflops"]
            cnt_r = f2 / f1
            verdict = "PASS" if abs(cnt_r / own_r - 1) <= 0.10 else "FAIL"
            chk.add(verdict, "GROMACS work 1->2 ranks: own accounting vs counted",
                    f"GROMACS FLOPs x{own_r:.3f}, counted application FLOPs x{cnt_r:.3f} (tolerance 10%)")
    elif code == "qe":
        for key in ("PWSCF", "electrons", "c_bands", "h_psi", "fftw", "cdiaghg", "calbec", "sum_band"):
            if key in o1 or key in o2:
                chk.add("INFO", f"QE {key} WALL", f"{fnum(o1.get(key))} s at {l1}, {fnum(o2.get(key))} s at {l2}")
        if "PWSCF" in o1 and "PWSCF" in o2 and cfg_time.get(l1) and cfg_time.get(l2):
            own_s = o1["PWSCF"] / o2["PWSCF"]
            rt_s = cfg_time[l1] / cfg_time[l2]
            verdict = "PASS" if abs(rt_s / own_s - 1) <= 0.15 else "FAIL"
            chk.add(verdict, "QE speedup: PWSCF WALL vs rtrace's window",
                    f"PWSCF {own_s:.2f}x, rtrace {rt_s:.2f}x (tolerance 15%)")
    elif code == "hpcc":
        for r, o, lab in ((1, o1, l1), (2, o2, l2)):
            if "HPL_N" in o and "HPL_time" in o:
                n = o["HPL_N"]
                hpl = 2.0 / 3.0 * n ** 3 + 2.0 * n ** 2
                fl = apps.get(lab, (None,))[0]
                _, dg = function_time(analysis, r"dgemm_kernel")
                chk.add("INFO", f"HPCC HPL at {lab}",
                        f"HPL {o.get('HPL_Tflops', float('nan')) * 1e3:.3g} GFLOP/s in {o['HPL_time']:.3g} s "
                        f"({hpl:.3e} FLOPs by HPL's formula); StarDGEMM {fnum(o.get('StarDGEMM_Gflops'))} GFLOP/s; "
                        f"rtrace counted {fnum(fl)} FLOPs in the whole suite"
                        + (f" ({fl / hpl:.1f}x HPL's)" if fl else ""))


def check_accounts(chk, analysis):
    """Issue 39: each step's named causes (less the functions' gains) sum to its
    lost time within the sampling uncertainty; the headline with its seconds."""
    for summ in analysis.get("summary", []):
        for acc in summ.get("accounts", []):
            step = f"ranks {fnum(acc['c1'])}->{fnum(acc['c2'])}"
            lost = acc["lost"]
            named = sum(c["seconds"] for c in acc["causes"]) + (acc["gained"] or 0)
            unc = acc["uncertainty"] or 0
            ok = lost is not None and abs(named - lost) <= max(unc, 0.01 * abs(lost))
            causes = ", ".join(f"{c['cause']}{' at ' + c['where'] if c['where'] else ''} {fnum(c['seconds'])} s "
                               f"({c['share']:.0%})" for c in acc["causes"][:4])
            chk.add("PASS" if ok else "FAIL", f"{step}: the named causes sum to the lost time",
                    f"lost {fnum(lost)} s; causes {fnum(named)} s net of gains; +-{fnum(unc)} s; {causes}")
            head = acc["headline"] or "none (" + acc["why_no_headline"] + ")"
            chk.add("INFO", f"{step}: headline", head + (" (tentative)" if acc["tentative"] else ""))


def check_cost(chk, run, times):
    for r in sorted(run.points):
        cw, status = run.counts_wall(r)
        cs, ce = times["count_start"].get(r), times["count_end"].get(r)
        if cs and ce:
            cw = ce - cs  # the whole pass as the user waits for it (Valgrind run, naming, HDF5)
        timed = run.wall.get(r)
        if cw is None or not timed:
            chk.add("INFO", f"counting pass <= 20x the timed run at ranks={r}", f"no counting run ({status})")
            continue
        ratio = cw / timed
        chk.add("PASS" if ratio <= 20 else "FAIL", f"counting pass <= 20x the timed run at ranks={r}",
                f"{cw:.1f} s / {timed:.2f} s = {ratio:.1f}x")


def print_counts_split(run):
    print("  counts by module (runtime = MPI library, transports, PMIx, libevent):")
    for r in sorted(run.points):
        ranks = run.group(r)["ranks"]
        s = counts_split([ranks[n] for n in sorted(ranks)])
        if s["ranks"] == 0:
            print(f"    ranks={r}: no counts")
            continue
        share = s["rt_instructions"] / s["instructions"] if s["instructions"] else float("nan")
        l1share = s["rt_l1"] / s["l1"] if s["l1"] else float("nan")
        print(f"    ranks={r}: instructions {s['instructions']:.3e} ({share:.1%} in the runtime), "
              f"FLOPs {s['flops']:.4e} ({s['rt_flops']:.2e} in the runtime), L1 bytes {s['l1']:.3e} "
              f"({l1share:.1%} in the runtime)")


# ------------------------------------------------------------------ main


def sweep_report(code, d, summary_path):
    sweep_dir = os.path.join(d, "sweep")
    plain = {}
    for r in (1, 2):
        plain[r] = read_time(os.path.join(d, "plain-r%d" % r, "time.txt"))
    run_path = os.path.join(sweep_dir, "run.h5")
    times = sweep_times(os.path.join(sweep_dir, "sweep.log"))
    print(f"== {code}: times (s)")
    if not os.path.exists(run_path):
        print(f"  no run file: the sweep failed (exit {times['exit']}); its log: {sweep_dir}/sweep.log")
        for line in times["lines"][-5:]:
            print("   ", line)
        return 1
    run = RunFile(run_path)
    row = {"code": code}
    print(f"  {'ranks':>5} {'plain':>8} {'plain cpu':>9} {'traced':>8} {'tr cpu':>8} {'tr/plain':>8} {'counting':>9} "
          f"{'(valgrind)':>10} {'cnt/timed':>9} {'ert+commit':>10}  launcher")
    for r in sorted(run.points):
        pw, pc = plain.get(r, (None, None))
        timed = run.wall.get(r)
        cw, _ = run.counts_wall(r)
        cs, ce = times["count_start"].get(r), times["count_end"].get(r)
        pass_s = ce - cs if cs and ce else None
        ert = times["point_end"][r] - ce if ce and r in times["point_end"] else None
        ratio = pass_s / timed if pass_s and timed else None
        print(f"  {r:>5} {fnum(pw):>8} {fnum(pc):>9} {fnum(timed):>8} {fnum(run.cpu(r)):>8} "
              f"{fnum(timed / pw if timed and pw else None):>8} {fnum(pass_s):>9} {fnum(cw):>10} "
              f"{fnum(ratio):>9} {fnum(ert):>10}  {run.attr(r, 'launcher')}")
        row.update({f"plaincpu{r}": pc, f"tracedcpu{r}": run.cpu(r), f"plain{r}": pw, f"traced{r}": timed, f"count{r}": pass_s, f"ratio{r}": ratio, f"ert{r}": ert})
    ert_total = sum(v for k, v in row.items() if k.startswith("ert") and v)
    print(f"  sweep {fnum(times['total'])} s, of which ERT (+commit) {fnum(ert_total)} s "
          f"({ert_total / times['total']:.0%})" if times["total"] else "  sweep time unknown")
    row["sweep"] = times["total"]
    try:
        with open(os.path.join(sweep_dir, "a.json")) as f:
            analysis = json.load(f)
    except (OSError, ValueError) as e:
        print(f"  no analysis: {e}")
        return 1
    text = read_text(os.path.join(sweep_dir, "a.txt"))
    print_counts_split(run)
    print(f"== {code}: checks")
    chk = Checks(code)
    check_registers(chk, text, analysis)
    check_capacity_vs_mpi(chk, analysis)
    check_gemm(chk, code, analysis, text)
    own = {}
    for r in sorted(run.points):
        out, where = timed_output(code, run, r, sweep_dir)
        t = own_timers(code, out)
        if t:
            own[r] = t
        else:
            chk.add("INFO", f"own timers at ranks={r}", f"none found in {where}")
    check_own_timers(chk, code, analysis, own, run)
    check_accounts(chk, analysis)
    check_cost(chk, run, times)
    row.update({"pass": chk.count("PASS"), "fail": chk.count("FAIL"), "info": chk.count("INFO")})
    with open(summary_path, "a") as f:
        f.write(json.dumps(row) + "\n")
    return 1 if chk.count("FAIL") else 0


def cost_report(code, d):
    """--cost: per ranks value, wall and CPU seconds of plain, valgrind none,
    cachegrind and the counting tool (Open MPI's waiting ranks polling, or yielding)."""
    variants = ["plain", "none", "cachegrind", "counts-spin", "counts-yield"]
    print(f"== {code}: where the counting pass's time goes (wall s / CPU s; x = wall over plain)")
    print(f"  {'ranks':>5} " + " ".join(f"{v:>20}" for v in variants))
    for r in (1, 2):
        cells = []
        base = read_time(os.path.join(d, f"cost-r{r}-plain", "time.txt"))[0]
        for v in variants:
            w, c = read_time(os.path.join(d, f"cost-r{r}-{v}", "time.txt"))
            if w is None:
                cells.append(f"{'-':>20}")
            else:
                x = f" {w / base:.1f}x" if base else ""
                cells.append(f"{fnum(w) + '/' + fnum(c) + x:>20}")
        print(f"  {r:>5} " + " ".join(cells))
    for r in (1, 2):
        for v in ("counts-spin", "counts-yield"):
            path = os.path.join(d, f"cost-r{r}-{v}", "c.h5")
            if not os.path.exists(path):
                continue
            with h5py.File(path, "r") as f:
                ranks = f["ranks"]
                s = counts_split([ranks[n] for n in sorted(ranks)])
                walls = []
                for n in sorted(ranks):
                    if "counts_info" in ranks[n]:
                        walls.append(float(ranks[n]["counts_info"][()][0]["wall_s"]))
            share = s["rt_instructions"] / s["instructions"] if s["instructions"] else float("nan")
            print(f"    ranks={r} {v:<12}: instructions {s['instructions']:.4e} ({share:.1%} runtime), app FLOPs "
                  f"{s['flops'] - s['rt_flops']:.6e}, app L1 bytes {s['l1'] - s['rt_l1']:.4e}, "
                  f"runtime L1 bytes {s['rt_l1']:.3e}; valgrind wall {', '.join(fnum(w) for w in walls)} s")
        st = {v: read_time(os.path.join(d, f"cost-r{r}-startup-{v}", "time.txt")) for v in ("plain", "none", "counts")}
        if all(w is not None for w, _ in st.values()):
            print(f"    ranks={r} startup (the code with no work, wall/CPU s): plain {fnum(st['plain'][0])}/"
                  f"{fnum(st['plain'][1])}, valgrind none {fnum(st['none'][0])}/{fnum(st['none'][1])}, rtrace counts "
                  f"{fnum(st['counts'][0])}/{fnum(st['counts'][1])}")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "sweep":
        return sweep_report(argv[1], argv[2], argv[3])
    if len(argv) >= 3 and argv[0] == "cost":
        return cost_report(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
