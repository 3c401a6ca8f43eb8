#!/usr/bin/python3
"""Checks the contents of an rtrace run file written under Slurm (h5py).

    check_run.py FILE [--points N] [--complete N | --complete-between A B]
                      [--ok N] [--ok-min N] [--statuses ok,signalled]
                      [--ranks POINT=N ...] [--slurm-job ID]
                      [--launcher NAME] [--print-complete]
                      [--hosts POINT=N ...] [--node-ceilings POINT=N ...]
                      [--failed-host POINT=HOST ...]

Exits 0 when every given expectation holds, 1 with one line per violation.
--print-complete prints the number of complete points and exits 0 (used to
poll a running sweep). --hosts: the point's /hosts table lists N hosts, all
`ok`, whose rank lists match the rank groups' own host; --node-ceilings: the
point keeps N nodes' ceilings and its ceilings name one of them (the slowest);
--failed-host: the point's /hosts table has HOST in state `failed`.
"""
import argparse
import sys

import h5py


def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--points", type=int)
    ap.add_argument("--complete", type=int)
    ap.add_argument("--complete-between", type=int, nargs=2)
    ap.add_argument("--ok", type=int)
    ap.add_argument("--ok-min", type=int)
    ap.add_argument("--statuses", help="comma-separated statuses allowed for complete points")
    ap.add_argument("--ranks", action="append", default=[])
    ap.add_argument("--slurm-job")
    ap.add_argument("--launcher")
    ap.add_argument("--print-complete", action="store_true")
    ap.add_argument("--hosts", action="append", default=[])
    ap.add_argument("--node-ceilings", action="append", default=[])
    ap.add_argument("--failed-host", action="append", default=[])
    a = ap.parse_args()

    errors = []
    with h5py.File(a.file, "r") as f:
        rows = f["sweep/points"][...]
        complete = [r for r in rows if r["complete"] == 1]
        if a.print_complete:
            print(len(complete))
            return 0
        ok = [r for r in complete if s(r["status"]) == "ok"]
        if a.points is not None and len(rows) != a.points:
            errors.append(f"{len(rows)} planned points, expected {a.points}")
        if a.complete is not None and len(complete) != a.complete:
            errors.append(f"{len(complete)} complete points, expected {a.complete}")
        if a.complete_between is not None:
            lo, hi = a.complete_between
            if not lo <= len(complete) <= hi:
                errors.append(f"{len(complete)} complete points, expected {lo}..{hi}")
        if a.ok is not None and len(ok) != a.ok:
            statuses = ", ".join(f"{r['point_id']}:{s(r['status'])}" for r in rows)
            errors.append(f"{len(ok)} ok points, expected {a.ok} ({statuses})")
        if a.ok_min is not None and len(ok) < a.ok_min:
            statuses = ", ".join(f"{r['point_id']}:{s(r['status'])}" for r in rows)
            errors.append(f"{len(ok)} ok points, expected at least {a.ok_min} ({statuses})")
        if a.statuses is not None:
            allowed = set(a.statuses.split(","))
            for r in complete:
                if s(r["status"]) not in allowed:
                    errors.append(f"point {r['point_id']} has status `{s(r['status'])}`, allowed: {a.statuses}")
        for r in complete:
            name = "p%06d" % r["point_id"]
            if name not in f["points"]:
                errors.append(f"point {r['point_id']} is complete but /points/{name} is missing")
        for spec in a.ranks:
            pid, n = (int(x) for x in spec.split("="))
            path = "points/p%06d/ranks" % pid
            have = len(f[path]) if path in f else 0
            if have != n:
                errors.append(f"point {pid} has {have} rank groups, expected {n}")
            for rank in range(n):
                info = "%s/r%06d/info" % (path, rank)
                if info not in f:
                    errors.append(f"point {pid}: rank {rank} has no {info}")
        for spec in a.hosts:
            pid, n = (int(x) for x in spec.split("="))
            g = f["points/p%06d" % pid]
            if "hosts" not in g:
                errors.append(f"point {pid} has no hosts table")
                continue
            hosts = g["hosts"][...]
            if len(hosts) != n:
                errors.append(f"point {pid} lists {len(hosts)} hosts, expected {n}")
            by_rank = {}
            for name in g["ranks"]:
                info = g["ranks"][name]["info"][0]
                by_rank[int(info["rank"])] = s(info["host"])
            for h in hosts:
                if s(h["state"]) != "ok":
                    errors.append(f"point {pid}: host {s(h['host'])} is `{s(h['state'])}`")
                ranks = sorted(r for r, host in by_rank.items() if host == s(h["host"]))
                if int(h["ranks"]) != len(ranks) or not ranks:
                    errors.append(f"point {pid}: host {s(h['host'])} lists {int(h['ranks'])} ranks, the rank groups {ranks}")
            if len({s(h["host"]) for h in hosts}) != len(hosts):
                errors.append(f"point {pid}: a host is listed twice")
        for spec in a.node_ceilings:
            pid, n = (int(x) for x in spec.split("="))
            g = f["points/p%06d" % pid]
            if "node_ceilings" not in g or "ceilings" not in g:
                errors.append(f"point {pid} has no node_ceilings/ceilings")
                continue
            nodes = {s(r["host"]) for r in g["node_ceilings"][...]}
            if len(nodes) != n:
                errors.append(f"point {pid} has ceilings of {len(nodes)} nodes ({sorted(nodes)}), expected {n}")
            for c in g["ceilings"][...]:
                if s(c["host"]) not in nodes:
                    errors.append(f"point {pid}: ceiling {s(c['name'])} names host `{s(c['host'])}`, not one of the nodes")
        for spec in a.failed_host:
            pid, host = spec.split("=")
            g = f["points/p%06d" % int(pid)]
            states = {s(h["host"]): s(h["state"]) for h in g["hosts"][...]} if "hosts" in g else {}
            if states.get(host) != "failed":
                errors.append(f"point {pid}: host {host} is `{states.get(host)}`, expected `failed` (hosts: {states})")
        run = f["run"].attrs
        if a.slurm_job is not None and s(run.get("slurm_job_id", "")) != a.slurm_job:
            errors.append(f"/run slurm_job_id is `{s(run.get('slurm_job_id', ''))}`, expected `{a.slurm_job}`")
        if a.slurm_job is not None and not s(run.get("slurm_nodelist", "")):
            errors.append("/run slurm_nodelist is empty")
        if a.launcher is not None and s(run.get("launcher", "")) != a.launcher:
            errors.append(f"/run launcher is `{s(run.get('launcher', ''))}`, expected `{a.launcher}`")
    for e in errors:
        print(f"check_run.py: {a.file}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
