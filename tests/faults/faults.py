#!/usr/bin/env python3
"""Fault injection through the real `rtrace` binary (ctest label `faults`).

Every case runs rtrace as a black box against tests/faults/faults_app (an app
that crashes, hangs, floods stdout, ...) or against bad input, checks the
outcome, and writes one JSON file of rows to --results-dir:

    {"fault": ..., "group": ..., "trials": N, "outcome": ..., "passed": bool}

scripts/gen-reliability.py renders those rows as docs/reliability.md.

usage: faults.py CASE --rtrace BIN --app BIN --inspect BIN --work DIR --results-dir DIR
Exit: 0 pass, 1 fail, 77 skip (with the reason on stdout).

A case that finds a bug (KnownBug) fails unless the bug is listed, with its
reason and the open item that tracks it, in tests/faults/known-bugs.json; a
command that runs past its limit fails (there are no "gap" passes).
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

SKIP = 77


class Failure(Exception):
    pass


class Skip(Exception):
    pass


class KnownBug(Exception):
    """A bug rtrace has today. The case fails unless the bug is listed in
    KNOWN_BUGS (tests/faults/known-bugs.json) with a reason and an open item;
    a listed bug skips the case (exit 77, with the reason), and
    RTRACE_FAULTS_STRICT=1 fails it even then."""


KNOWN_BUGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known-bugs.json")


def listed_bug(case, text):
    """The known-bugs.json entry that covers `text` in `case`, else None. An
    entry without a reason or an open item is a failure of its own."""
    with open(KNOWN_BUGS) as f:
        entries = json.load(f)["bugs"]
    for e in entries:
        if not (e.get("case") and e.get("match") and str(e.get("reason", "")).strip()
                and str(e.get("open_item", "")).strip()):
            raise Failure(f"{KNOWN_BUGS}: entry {e} needs case, match, reason and open_item")
        if e["case"] == case and e["match"] in text:
            return e
    return None


class Context:
    def __init__(self, args):
        self.rtrace = args.rtrace
        self.app = args.app
        self.inspect_bin = args.inspect
        self.work = args.work
        self.have_analyze = args.have_analyze
        self.rows = []
        self.marker = "rtrace-faults-" + uuid.uuid4().hex
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        # Points run the app directly (no ERT, no tracer) unless a case asks:
        # the launcher's own behaviour is under test, and it must stay fast.
        self.env = dict(os.environ)
        self.env["FAULTS_MARKER"] = self.marker
        self.env["RTRACE_CACHE_DIR"] = os.path.join(self.work, "cache")
        self.env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        self.env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        self.env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, argv, timeout=120, **kw):
        """Runs rtrace (or anything) and returns (rc, stdout, stderr, seconds)."""
        t0 = time.monotonic()
        p = subprocess.run(argv, env=kw.pop("env", self.env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, **kw)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), time.monotonic() - t0

    def sweep(self, out, app_args, extra=(), sweep=("env:FAULTS_N=1",), timeout=120, env=None):
        argv = [self.rtrace, "run"]
        for s in sweep:
            argv += ["--sweep", s]
        argv += ["--ert", "none", "--tracer", "none", "-o", out] + list(extra) + ["--", self.app] + list(app_args)
        return self.run(argv, timeout=timeout, env=env or self.env)

    def inspect(self, path):
        rc, out, err, _ = self.run([self.inspect_bin, path])
        if rc != 0:
            raise Failure(f"faults_inspect {path}: rc {rc}: {err.strip()}")
        return json.loads(out)

    def leftovers(self):
        """Processes still carrying this test's marker in their environment."""
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if self.marker.encode() in f.read():
                        with open(f"/proc/{pid}/cmdline", "rb") as c:
                            cmdline = c.read().replace(b"\0", b" ").decode(errors="replace").strip()
                        found.append(f"{pid}:{cmdline}")
            except OSError:
                pass
        return found

    def wait_no_leftovers(self, seconds=3.0):
        deadline = time.monotonic() + seconds
        while True:
            left = self.leftovers()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)

    def kill_leftovers(self):
        for entry in self.leftovers():
            try:
                os.kill(int(entry.split(":")[0]), signal.SIGKILL)
            except OSError:
                pass

    def row(self, group, fault, trials, outcome, passed=True, result=None):
        """result: shown in the table; default "pass"/"FAIL". "known bug" rows name the report."""
        self.rows.append({"group": group, "fault": fault, "trials": trials, "outcome": outcome, "passed": passed,
                          "result": result or ("pass" if passed else "FAIL")})
        print(f"[{self.rows[-1]['result']}] {fault}: {outcome} ({trials} trial{'s' if trials != 1 else ''})")


SANITIZER_VARS = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS")


def sanitized():
    """True in a sanitizer build's test run (scripts/sanitize.sh sets these)."""
    return any(v in os.environ for v in SANITIZER_VARS)


def with_sanitizer_options(env, log_dir=None, extra=""):
    """`env` with every sanitizer's log_path pointed into `log_dir` (one file
    per process) and `extra` options appended."""
    env = dict(env)
    for var in SANITIZER_VARS:
        if var in env:
            opts = [o for o in env[var].split(":") if o and not (log_dir and o.startswith("log_path="))]
            if log_dir:
                opts.append(f"log_path={log_dir}/{var.split('_')[0].lower()}")
            if extra:
                opts.append(extra)
            env[var] = ":".join(opts)
    return env


def sanitizer_reports(log_dir, binary):
    """Classifies the report files in `log_dir` like the fuzz triage does
    (tests/fuzz/classify.py): returns (inside libhdf5, rtrace's) lists."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz"))
    import classify
    hdf5, ours = [], []
    for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else []:
        with open(os.path.join(log_dir, name), errors="replace") as f:
            text = f.read()
        where, kind, frame = classify.classify_output(text, binary, False)
        if where == "gone":
            continue
        (hdf5 if where == "libhdf5" else ours).append(f"{kind} in {frame} ({name})")
    return hdf5, ours


def expect(cond, what):
    if not cond:
        raise Failure(what)


def one_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    return len(lines) == 1, (lines[0] if lines else "")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def point_file_name(name):
    """A committed point's file in a run's points directory (RUN.d/pNNNNNN[-k].h5)."""
    return re.fullmatch(r"p[0-9]{6}(-[0-9]+)?\.h5", name) is not None


def remove_run(path):
    """A run file and its points directory."""
    os.remove(path)
    shutil.rmtree(path + ".d", ignore_errors=True)


def point(ctx, path, index=0):
    info = ctx.inspect(path)
    expect(info["verdict"] == "valid", f"{path}: not valid after the run: {info['fatal']} {info['deviations'][:3]}")
    expect("read_error" not in info, f"{path}: reading back failed: {info.get('read_error')}")
    return info["points"][index]


# ------------------------------------------------------------------ app faults
def case_app(ctx):
    g = "app misbehaves"
    out = ctx.path("segv.h5")
    # Under ASan the app's deliberate SIGSEGV must stay a signal (ASan would
    # turn it into a report and exit 1): handle_segv=0 for this sweep only.
    rc, _, err, _ = ctx.sweep(out, ["segv"], env=with_sanitizer_options(ctx.env, extra="handle_segv=0"))
    p = point(ctx, out)
    expect(rc == 1, f"segv: rtrace exit {rc}, want 1 (some points failed); stderr: {err}")
    expect(p["complete"] and p["status"] == "signalled" and p["signal"] == signal.SIGSEGV,
           f"segv: point recorded as {p}")
    expect("about to crash" in p["stdout_tail"], "segv: the output before the crash was lost")
    ctx.row(g, "app dies of SIGSEGV", 1, "point `signalled`, signal 11, output before the crash kept; rtrace exit 1")

    out = ctx.path("exit3.h5")
    rc, _, err, _ = ctx.sweep(out, ["exit", "3"], sweep=("env:FAULTS_N=1,2",))
    info = ctx.inspect(out)
    expect(rc == 1, f"exit 3: rtrace exit {rc}, want 1")
    expect(info["verdict"] == "valid" and all(p["complete"] and p["status"] == "failed" and p["exit_code"] == 3
                                               for p in info["points"]), f"exit 3: points {info['points']}")
    ctx.row(g, "app exits 3 (2 points)", 2, "both points `failed`, exit code 3, sweep goes on; rtrace exit 1")

    out = ctx.path("mixed.h5")
    rc, _, err, _ = ctx.sweep(out, ["exit", "0"], sweep=("env:FAULTS_N=1,2",), extra=["--fail-fast"])
    expect(rc == 0, f"exit 0 with --fail-fast: rtrace exit {rc}")
    ctx.row(g, "app exits 0 (control)", 2, "points `ok`; rtrace exit 0")

    for mode, what in (("close-stdout", "app closes stdout and stderr at once"),
                       ("close-then-write", "app closes stdout, then writes 64 MiB to it")):
        out = ctx.path(mode + ".h5")
        rc, _, err, _ = ctx.sweep(out, [mode])
        p = point(ctx, out)
        expect(rc == 0 and p["status"] == "ok", f"{mode}: rtrace exit {rc}, point {p}; stderr: {err}")
        ctx.row(g, what, 1, "point `ok`, no hang, file valid")


def case_timeout(ctx):
    g = "app hangs"
    for mode, extra, what in (
            ("hang", [], "app and its child hang past --timeout 1"),
            ("hang-escape", [], "hung child escapes the process group (setsid)"),
            ("hang-noterm", ["--grace", "0.5"], "app ignores SIGTERM (--grace 0.5 then SIGKILL)")):
        out = ctx.path(mode + ".h5")
        rc, _, err, secs = ctx.sweep(out, [mode], extra=["--timeout", "1"] + extra, timeout=60)
        left = ctx.wait_no_leftovers()
        ctx.kill_leftovers()
        p = point(ctx, out)
        expect(not left, f"{mode}: processes left after the timeout: {left}")
        expect(rc == 1 and p["status"] == "timeout", f"{mode}: rtrace exit {rc}, point {p}; stderr {err}")
        expect(secs < 20, f"{mode}: the timed-out sweep took {secs:.1f} s")
        ctx.row(g, what, 1, f"point `timeout` after {secs:.1f} s, no process left (checked by marker in /proc/*/environ)")

    if not shutil.which("mpirun", path=ctx.env.get("PATH")):
        ctx.row(g, "MPI ranks hang past --timeout", 0, "skipped: no mpirun on PATH")
        return
    out = ctx.path("mpi-hang.h5")
    rc, _, err, secs = ctx.sweep(out, ["hang"], sweep=("ranks=2",), extra=["--timeout", "2", "--launcher", "mpirun"],
                                 timeout=90)
    left = ctx.wait_no_leftovers(5)
    ctx.kill_leftovers()
    p = point(ctx, out)
    expect(not left, f"mpi hang: processes left after the timeout: {left}")
    expect(rc == 1 and p["status"] == "timeout", f"mpi hang: rtrace exit {rc}, point {p}; stderr {err}")
    ctx.row(g, "2 MPI ranks (mpirun) and their children hang past --timeout 2", 1,
            f"point `timeout` after {secs:.1f} s; mpirun, orted and both ranks gone")


def peak_rss_mb(proc):
    """Polls the process's VmHWM until it exits; returns the last value in MiB."""
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) // 1024)
        except OSError:
            pass
        time.sleep(0.02)
    return peak


def case_flood(ctx):
    g = "app misbehaves"
    # Under a sanitizer 256 MiB (ASan's shadow and quarantine cost RSS and time).
    size = int(os.environ.get("RTRACE_FAULTS_FLOOD_BYTES", str((256 << 20) if sanitized() else (2 << 30))))
    out = ctx.path("flood.h5")
    argv = [ctx.rtrace, "run", "--ert", "none", "--tracer", "none", "-o", out, "--", ctx.app, "flood", str(size)]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = peak_rss_mb(proc)
    err = proc.stderr.read().decode(errors="replace")
    secs = time.monotonic() - t0
    p = point(ctx, out)
    expect(proc.returncode == 0 and p["status"] == "ok", f"flood: rtrace exit {proc.returncode}, point {p}; {err}")
    expect(p["stdout_bytes"] == size + 12, f"flood: recorded {p['stdout_bytes']} bytes, the app wrote {size + 12}")
    expect(p["stdout_tail"].endswith("flood done\n"), "flood: the tail does not end with the app's last line")
    expect(len(p["stdout_tail"]) <= 4 << 20, f"flood: the stored tail is {len(p['stdout_tail'])} bytes")
    limit = int(os.environ.get("RTRACE_FAULTS_RSS_LIMIT_MB", "768" if sanitized() else "256"))
    expect(peak < limit, f"flood: rtrace's peak RSS {peak} MiB >= {limit} MiB")
    ctx.row(g, f"app prints {size / 2**30:.1f} GiB to stdout", 1,
            f"point `ok`, {p['stdout_bytes']} bytes counted, tail of {len(p['stdout_tail'])} bytes kept; "
            f"rtrace peak RSS {peak} MiB; {secs:.1f} s")


# ------------------------------------------------------------------ rtrace killed
def case_kill(ctx):
    g = "rtrace killed"
    trials = int(os.environ.get("RTRACE_FAULTS_KILL_TRIALS", "20"))
    npoints = 6
    sweep = (f"env:FAULTS_N=1..{npoints}",)
    app = ["ok", "50"]
    ref = ctx.path("reference.h5")
    # A warm-up run first: the timed reference must not pay for cold caches.
    ctx.sweep(ctx.path("warmup.h5"), app, sweep=sweep)
    argv = [ctx.rtrace, "run", "--sweep", sweep[0], "--ert", "none", "--tracer", "none", "-o", ref, "--", ctx.app] + app
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    created, last_change, mtime = None, None, None
    while proc.poll() is None:
        try:
            m = os.stat(ref).st_mtime_ns
            if created is None:
                created = time.monotonic() - t0
            if m != mtime:
                mtime, last_change = m, time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.002)
    full = time.monotonic() - t0
    created = created if created is not None else full / 3
    last_change = last_change if last_change is not None else full
    rc, err = proc.returncode, proc.stderr.read().decode(errors="replace")
    expect(rc == 0, f"reference sweep failed: {rc} {err}")
    want = {(p["label"], p["status"], p["stdout_tail"]) for p in ctx.inspect(ref)["points"]}
    expect(len(want) == npoints, f"reference: {want}")
    rng = random.Random(int(os.environ.get("RTRACE_FAULTS_SEED", "9")))
    stats = {"before create": 0, "partial": 0, "finished": 0}
    for t in range(trials):
        out = ctx.path(f"kill-{t}.h5")
        argv = [ctx.rtrace, "run", "--sweep", sweep[0], "--ert", "none", "--tracer", "none", "-o", out, "--", ctx.app] + app
        proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Mostly while points commit; a few before the file exists or after the last commit.
        time.sleep(rng.uniform(created * 0.8, last_change * 1.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not os.path.exists(out):
            stats["before create"] += 1
            resume = ["--sweep", sweep[0]]  # nothing to resume: a plain rerun
        else:
            info = ctx.inspect(out)
            expect(info["verdict"] == "valid", f"trial {t}: file invalid after SIGKILL: {info['fatal']} {info['deviations'][:3]}")
            done = [p for p in info["points"] if p["complete"]]
            for p in done:
                expect((p["label"], p["status"], p["stdout_tail"]) in want, f"trial {t}: completed point differs: {p}")
            stats["finished" if len(done) == npoints else "partial"] += 1
            resume = ["--resume"]
        ctx.wait_no_leftovers(3)  # the orphaned app of the killed point finishes its 50 ms
        rc, _, err, _ = ctx.run([ctx.rtrace, "run"] + resume + ["--ert", "none", "--tracer", "none", "-o", out, "--",
                                ctx.app] + app)
        expect(rc == 0, f"trial {t}: --resume exit {rc}: {err.strip()}")
        got = {(p["label"], p["status"], p["stdout_tail"]) for p in ctx.inspect(out)["points"] if p["complete"]}
        expect(got == want, f"trial {t}: resumed file has {sorted(got)}, want {sorted(want)}")
        leftover_tmp = [f for f in os.listdir(ctx.work)
                        if f.startswith(f"kill-{t}.h5") and f not in (f"kill-{t}.h5", f"kill-{t}.h5.d")]
        leftover_tmp += [f for f in os.listdir(out + ".d") if not point_file_name(f)] if os.path.isdir(out + ".d") else []
        expect(not leftover_tmp, f"trial {t}: files left next to the output after resume: {leftover_tmp}")
        remove_run(out)
    ctx.row(g, f"SIGKILL of rtrace at a random moment of a {npoints}-point sweep", trials,
            f"every file valid, completed points intact, `--resume` gave the uninterrupted result every time "
            f"(killed before the file existed: {stats['before create']}, mid-sweep: {stats['partial']}, "
            f"after the last commit: {stats['finished']})")

    # SIGINT / SIGTERM while a point hangs: the tree is stopped, the file stays valid.
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = ctx.path(f"sig{int(sig)}.h5")
        argv = [ctx.rtrace, "run", "--sweep", "env:FAULTS_N=1,2", "--ert", "none", "--tracer", "none", "-o", out, "--",
                ctx.app, "hang"]
        proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise Failure(f"{sig.name}: rtrace did not stop within 30 s")
        left = ctx.wait_no_leftovers()
        ctx.kill_leftovers()
        info = ctx.inspect(out)
        expect(not left, f"{sig.name}: processes left: {left}")
        expect(proc.returncode == 128 + int(sig), f"{sig.name}: rtrace exit {proc.returncode}")
        expect(info["verdict"] == "valid", f"{sig.name}: file not valid")
        ctx.row(g, f"{sig.name} to rtrace while the app hangs", 1,
                f"app tree stopped, no process left, file valid, exit {128 + int(sig)}, resume hint printed")

    # SIGKILL of rtrace while the app hangs: PDEATHSIG stops the app's main
    # process, rtrace's keeper process the rest of its tree.
    variants = [("the app and its child hang", ["hang"], []),
                ("a child that left the process group (setsid) hangs", ["hang-escape"], [])]
    if shutil.which("mpirun", path=ctx.env.get("PATH")):
        variants.append(("2 MPI ranks (mpirun) hang", ["hang"], ["--sweep", "ranks=2", "--launcher", "mpirun"]))
    for what, app_args, extra in variants:
        out = ctx.path("kill-hang.h5")
        argv = [ctx.rtrace, "run", "--ert", "none", "--tracer", "none", "-o", out] + extra + ["--", ctx.app] + app_args
        proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        proc.kill()
        proc.wait()
        t0 = time.monotonic()
        left = ctx.wait_no_leftovers(5)
        secs = time.monotonic() - t0
        ctx.kill_leftovers()
        expect(not left, f"SIGKILL of rtrace while {what}: processes kept running: {left}")
        expect(os.path.exists(out), f"SIGKILL while {what}: the run file was not created within 1.5 s")
        info = ctx.inspect(out)
        expect(info["verdict"] == "valid", f"SIGKILL while {what}: file not valid")
        ctx.row(g, f"SIGKILL of rtrace while {what}", 1,
                f"the whole app tree was gone {secs:.2f} s after rtrace died (keeper process); file valid")
        os.remove(out)


# ------------------------------------------------------------------ rtrace killed during the index update
def case_kill_index(ctx):
    """SIGKILL while the run file's index is being replaced: the point file of
    the point being committed is already whole in RUN.d/, the index copy
    (RUN.rtrace-tmp) not yet renamed. The old index must stay valid without
    that point, and --resume must redo it and remove the orphan file."""
    g = "rtrace killed"
    trials = int(os.environ.get("RTRACE_FAULTS_KILL_TRIALS", "20"))
    npoints = 6
    sweep = f"env:FAULTS_N=1..{npoints}"
    app = ["ok", "1"]
    ref = ctx.path("index-reference.h5")
    rc, _, err, _ = ctx.sweep(ref, app, sweep=(sweep,))
    expect(rc == 0, f"reference sweep failed: {rc} {err}")
    want = {(p["label"], p["status"], p["stdout_tail"]) for p in ctx.inspect(ref)["points"]}
    rng = random.Random(int(os.environ.get("RTRACE_FAULTS_SEED", "9")))
    hits = 0
    for t in range(trials):
        out = ctx.path(f"kill-index-{t}.h5")
        tmp, pdir = out + ".rtrace-tmp", out + ".d"
        commit = rng.randint(1, npoints)  # kill while the index of this commit is written
        argv = [ctx.rtrace, "run", "--sweep", sweep, "--ert", "none", "--tracer", "none", "-o", out, "--", ctx.app] + app
        proc = subprocess.Popen(argv, env=ctx.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        orphan_seen = False
        while proc.poll() is None:
            # The index copy exists only during an index update (after the file exists).
            if os.path.exists(tmp) and os.path.exists(out):
                try:
                    files = [f for f in os.listdir(pdir) if point_file_name(f)]
                except OSError:
                    files = []
                if len(files) >= commit:
                    proc.send_signal(signal.SIGKILL)
                    break
        proc.wait()
        if proc.returncode != -signal.SIGKILL:
            remove_run(out)
            continue
        info = ctx.inspect(out)
        expect(info["verdict"] == "valid", f"trial {t}: file invalid after SIGKILL during the index update: "
               f"{info['fatal']} {info['deviations'][:3]}")
        done = [p for p in info["points"] if p["complete"]]
        for p in done:
            expect((p["label"], p["status"], p["stdout_tail"]) in want, f"trial {t}: completed point differs: {p}")
        files = [f for f in os.listdir(pdir) if point_file_name(f)]
        # A point file that the index does not name: the kill hit the index update itself.
        orphan_seen = len(files) > len(done)
        hits += orphan_seen
        ctx.wait_no_leftovers(3)
        rc, _, err, _ = ctx.run([ctx.rtrace, "run", "--resume", "--ert", "none", "--tracer", "none", "-o", out, "--",
                                 ctx.app] + app)
        expect(rc == 0, f"trial {t}: --resume exit {rc}: {err.strip()}")
        got = {(p["label"], p["status"], p["stdout_tail"]) for p in ctx.inspect(out)["points"] if p["complete"]}
        expect(got == want, f"trial {t}: resumed file has {sorted(got)}, want {sorted(want)}")
        left = sorted(os.listdir(pdir))
        expect(len(left) == npoints and all(point_file_name(f) for f in left),
               f"trial {t}: after --resume the points directory holds {left}, want {npoints} point files")
        expect(not os.path.exists(tmp), f"trial {t}: the index temp file was left after --resume")
        remove_run(out)
    expect(hits > 0, f"no trial of {trials} killed rtrace between a point file and its index update")
    ctx.row(g, f"SIGKILL of rtrace during the run-file index update ({npoints}-point sweep)", trials,
            f"killed with the point file written and the index not yet replaced in {hits} trials: the old index "
            f"stayed valid without that point; `--resume` redid it, removed the orphan point file and gave "
            f"the uninterrupted result every time")


# ------------------------------------------------------------------ disk full
def case_disk_full(ctx):
    g = "output filesystem"
    mnt = ctx.path("tmpfs")
    os.makedirs(mnt)
    # The smallest size that holds the new file and a few commits; grown when
    # the file does not even get created (its size depends on the machine).
    sizes = [int(os.environ["RTRACE_FAULTS_TMPFS_KB"])] if "RTRACE_FAULTS_TMPFS_KB" in os.environ else [768, 1536, 3072]
    bugs = []
    # 1. Too small for the new run file itself.
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise Skip(f"cannot mount a tmpfs here ({r.stdout.decode().strip()}); needs root or CAP_SYS_ADMIN")
    try:
        out = os.path.join(mnt, "run.h5")
        rc, _, err, _ = ctx.sweep(out, ["ok"], sweep=("env:FAULTS_N=1..3",))
        single, line = one_line(err)
        left = sorted(os.listdir(mnt))
        verdict = ctx.inspect(out)["verdict"] if os.path.exists(out) else "absent"
        problems = []
        if rc != 2:
            problems.append(f"exit {rc}" + (" (SIGSEGV)" if rc in (-11, 139) else ""))
        if not single:
            problems.append("not one line")
        if verdict not in ("absent", "valid"):
            problems.append(f"a damaged {os.path.getsize(out)}-byte run.h5 ({verdict}) left at the output path")
        ctx.row(g, "output filesystem full before the run file exists (96 KiB tmpfs)", 1,
                f"\"{line[:140]}\"" + (f"; BUT {', '.join(problems)}" if problems else "; nothing left behind"),
                passed=not problems, result="known bug (reported: store)" if problems else None)
        if problems:
            bugs.append("create on a full disk: " + ", ".join(problems))
    finally:
        subprocess.run(["umount", "-l", mnt])
    # 2. Room for the file and a few points, not for the whole sweep.
    for size_kb in sizes:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", mnt], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise Skip(f"cannot mount a tmpfs here ({r.stdout.decode().strip()}); needs root or CAP_SYS_ADMIN")
        try:
            done = disk_full_once(ctx, g, mnt, size_kb, last=size_kb == sizes[-1], bugs=bugs)
        finally:
            subprocess.run(["umount", "-l", mnt])
        if done:
            break
    if bugs:
        raise KnownBug("; ".join(bugs) + " (store, reported: after a failed H5Fclose the file stays open inside HDF5 and its exit handler "
                       "crashes in H5F__close_cb; RunFile::create closes the file while `Group sweep` is still open, "
                       "so H5Fclose defers the flush, its ENOSPC is swallowed and the damaged file is renamed into "
                       "place; hdf5_error_message keeps HDF5's newline)")


def disk_full_once(ctx, g, mnt, size_kb, last, bugs):
    """One attempt; False when the tmpfs was too small to create the file."""
    out = os.path.join(mnt, "run.h5")
    # 40 points, each keeping a 64 KiB output tail: the file outgrows the tmpfs.
    sweep = ("env:FAULTS_N=1..40",)
    rc, _, err, _ = ctx.sweep(out, ["flood", str(64 << 10)], sweep=sweep)
    expect(rc != 0, "disk full: rtrace exit 0")
    errors = [l for l in err.splitlines() if l.startswith("rtrace run:")]
    expect(errors and "No space left on device" in err, f"disk full: no clear error: {err.strip()}")
    if not last and (not os.path.exists(out) or os.path.getsize(out) == 0 or
                     not any(p["complete"] for p in ctx.inspect(out)["points"])):
        return False  # too small for the new file and one commit: try a larger tmpfs
    expect(os.path.exists(out), f"disk full: the run file is gone; stderr: {err.strip()}")
    info = ctx.inspect(out)
    done = [p for p in info["points"] if p["complete"]]
    expect(info["verdict"] == "valid", f"disk full: the file is not valid: {info['fatal']} {info['deviations'][:3]}")
    expect(0 < len(done) < 40, f"disk full: {len(done)} points complete; the tmpfs size does not fit this test")
    expect(all(p["status"] == "ok" and p["stdout_bytes"] == (64 << 10) + 12 for p in done),
           "disk full: a completed point is damaged")
    ids = sorted(p["id"] for p in done)
    expect(ids == list(range(ids[0], ids[0] + len(ids))), f"disk full: completed points are not a prefix: {ids}")
    stray = [f for f in os.listdir(mnt) if f not in ("run.h5", "run.h5.d") and not f.startswith(".run.h5.scratch")]
    stray += [f for f in os.listdir(out + ".d") if not point_file_name(f)] if os.path.isdir(out + ".d") else []
    expect(not stray, f"disk full: temp files left on the full filesystem: {stray}")
    # What is still wrong (reported to the store owner): rtrace dies of SIGSEGV
    # in HDF5's exit handler, and the message carries HDF5's multi-line text.
    problems = []
    if rc != 2:
        problems.append(f"rtrace exit {rc} (want 2){' = SIGSEGV at exit' if rc == -11 else ''}")
    text = err[err.index(errors[0]):].split("\nrtrace: ")[0]
    if "\n" in text.strip():
        problems.append("the error message spans %d lines" % len(text.strip().splitlines()))
    ctx.row(g, f"output filesystem full ({size_kb} KiB tmpfs, 40 points)", 1,
            f"\"{errors[0][:110]}...No space left on device...\"; file valid with the first {len(done)} points "
            f"complete and intact; no temp file left" + ("; BUT " + ", ".join(problems) if problems else ""),
            passed=not problems, result="known bug (reported: store)" if problems else None)
    # Space again: --resume completes the sweep.
    subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
    rc2, _, err2, _ = ctx.sweep(out, ["flood", str(64 << 10)], sweep=sweep, extra=["--resume"])
    info = ctx.inspect(out)
    expect(rc2 == 0 and all(p["complete"] for p in info["points"]), f"disk full: resume after freeing space: {rc2} {err2}")
    ctx.row(g, "--resume after the filesystem has space again", 1, "all 40 points complete, file valid")
    if problems:
        bugs.append("commit on a full disk: " + ", ".join(problems))
    return True


# ------------------------------------------------------------------ bad input
def case_bad_input(ctx):
    g = "bad input"

    def refuse(fault, argv, want_rc=2, must_mention=(), file_untouched=None, no_file=None):
        before = sha(file_untouched) if file_untouched else None
        rc, _, err, _ = ctx.run(argv)
        single, line = one_line(err)
        expect(rc == want_rc, f"{fault}: exit {rc}, want {want_rc}; stderr: {err.strip()}")
        expect(single, f"{fault}: want one line on stderr, got: {err!r}")
        for word in must_mention:
            expect(word in line, f"{fault}: the message does not name `{word}`: {line}")
        expect("HDF5-DIAG" not in err, f"{fault}: HDF5 error dump on stderr")
        if file_untouched:
            expect(sha(file_untouched) == before, f"{fault}: {file_untouched} was modified")
        if no_file:
            expect(not os.path.exists(no_file), f"{fault}: {no_file} was created")
        ctx.row(g, fault, 1, f"exit {rc}: \"{line.strip()[:150]}\"")

    app = [ctx.app, "ok"]
    base = [ctx.rtrace, "run", "--ert", "none", "--tracer", "none"]

    # Output path problems.
    notdir = ctx.path("a-file")
    open(notdir, "w").close()
    refuse("output directory is a regular file", base + ["-o", notdir + "/run.h5", "--"] + app,
           must_mention=(notdir,))
    refuse("output directory does not exist", base + ["-o", ctx.path("no/such/dir/run.h5"), "--"] + app,
           must_mention=("no/such/dir",))
    ro = ctx.path("readonly")
    os.makedirs(ro)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro], stderr=subprocess.DEVNULL).returncode == 0:
        try:
            refuse("output on a read-only filesystem", base + ["-o", ro + "/run.h5", "--"] + app, must_mention=(ro,))
        finally:
            subprocess.run(["umount", "-l", ro])
    elif os.geteuid() != 0:
        os.chmod(ro, 0o555)
        refuse("output directory not writable (mode 0555)", base + ["-o", ro + "/run.h5", "--"] + app, must_mention=(ro,))
    else:
        ctx.row(g, "output on a read-only filesystem", 0, "skipped: root cannot mount a tmpfs here")

    # Existing output without --resume: refuse, do not clobber (a run file and a stranger's file).
    existing = ctx.path("existing.h5")
    rc, _, err, _ = ctx.sweep(existing, ["ok"])
    expect(rc == 0, f"setup: {err}")
    refuse("existing run file without --resume", base + ["-o", existing, "--"] + app, must_mention=("--resume",),
           file_untouched=existing)
    stranger = ctx.path("thesis.tex")
    with open(stranger, "w") as f:
        f.write("\\documentclass{article}\n")
    refuse("existing non-rtrace file as output", base + ["-o", stranger, "--"] + app, file_untouched=stranger)
    refuse("`rtrace validate --timeout` that is not a number", [ctx.rtrace, "validate", "--timeout", "soon", existing],
           must_mention=("--timeout", "soon"))

    # The app.
    refuse("missing app binary", base + ["-o", ctx.path("m.h5"), "--", ctx.path("no-such-app")],
           must_mention=("no-such-app",), no_file=ctx.path("m.h5"))
    refuse("app not on PATH", base + ["-o", ctx.path("p.h5"), "--", "rtrace-no-such-app-xyz"],
           must_mention=("rtrace-no-such-app-xyz",), no_file=ctx.path("p.h5"))
    noexec = ctx.path("not-executable.sh")
    with open(noexec, "w") as f:
        f.write("#!/bin/sh\necho hi\n")
    os.chmod(noexec, 0o644)
    refuse("app not executable (mode 0644)", base + ["-o", ctx.path("x.h5"), "--", noexec], must_mention=(noexec,),
           no_file=ctx.path("x.h5"))
    refuse("app is a directory", base + ["-o", ctx.path("d.h5"), "--", ctx.work], no_file=ctx.path("d.h5"))
    refuse("no app after --", base + ["-o", ctx.path("n.h5")], no_file=ctx.path("n.h5"))

    # Sweep specs (the grammar's own messages are tested in tests/launcher).
    for spec in ("sms=10..x", "threads=0", "threads=1..1000000000", "bogus=1", "env:=1", "threads=4..1:x1",
                 "threads="):
        refuse(f"bad sweep `{spec}`", base + ["--sweep", spec, "-o", ctx.path("s.h5"), "--"] + app,
               no_file=ctx.path("s.h5"))
    refuse("--zip with axes of different lengths",
           base + ["--zip", "--sweep", "threads=1,2", "--sweep", "env:N=1,2,3", "-o", ctx.path("z.h5"), "--"] + app,
           no_file=ctx.path("z.h5"))

    # GPU axis without a GPU (this machine has none; with a GPU the case is skipped).
    has_gpu = any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl"))
    if has_gpu:
        ctx.row(g, "sms axis without a GPU", 0, "skipped: this machine has a GPU")
    else:
        refuse("sms axis without a GPU", base + ["--sweep", "sms=16..32:16", "-o", ctx.path("g.h5"), "--"] + app,
               must_mention=("sms",), no_file=ctx.path("g.h5"))

    # Files: a newer schema major, garbage, truncation.
    newer = ctx.path("newer.h5")
    shutil.copy(existing, newer)
    rc, _, err, _ = ctx.run([ctx.inspect_bin, "--set-root-attr", newer, "schema_version", "2.0.0"])
    expect(rc == 0, f"setup: cannot rewrite schema_version: {err}")
    refuse("`rtrace validate` on a file of schema 2.0.0", [ctx.rtrace, "validate", newer], must_mention=("2",))
    # `analyze` is tested whenever this rtrace was built with it (--have-analyze
    # from CMake): an `analyze --help` that fails then is a failure, not a skip.
    analyze = ctx.have_analyze
    if analyze:
        rc, _, err, _ = ctx.run([ctx.rtrace, "analyze", "--help"])
        expect(rc == 0, f"rtrace was built with analysis, but `rtrace analyze --help` exits {rc}: {err.strip()}")
    if analyze:
        refuse("`rtrace analyze` on a file of schema 2.0.0", [ctx.rtrace, "analyze", newer], must_mention=("2",))
    refuse("`--resume` of a file of schema 2.0.0", base + ["--resume", "-o", newer, "--"] + app, file_untouched=newer)

    garbage = ctx.path("garbage.h5")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    truncated = ctx.path("truncated.h5")
    with open(existing, "rb") as src, open(truncated, "wb") as dst:
        dst.write(src.read()[: os.path.getsize(existing) // 2])
    empty = ctx.path("empty.h5")
    open(empty, "w").close()
    for name, path in (("random bytes", garbage), ("a run file cut in half", truncated), ("an empty file", empty)):
        refuse(f"`rtrace validate` on {name}", [ctx.rtrace, "validate", path])
        if analyze:
            refuse(f"`rtrace analyze` on {name}", [ctx.rtrace, "analyze", path])
        refuse(f"`--resume` of {name}", base + ["--resume", "-o", path, "--"] + app, file_untouched=path)
    refuse("`--resume` of a missing file", base + ["--resume", "-o", ctx.path("absent.h5"), "--"] + app,
           no_file=ctx.path("absent.h5"))
    refuse("`--resume` with another sweep", base + ["--resume", "--sweep", "env:FAULTS_N=1,2", "-o", existing, "--"]
           + app, file_untouched=existing)
    refuse("`--ert FILE` that does not exist", [ctx.rtrace, "run", "--ert", ctx.path("none.h5"), "--tracer", "none",
                                                "-o", ctx.path("e.h5"), "--"] + app, no_file=ctx.path("e.h5"))
    # An unreadable --ert FILE: refused before anything runs (one line), or the
    # points run without ceilings and their log says why. Either is a clear answer.
    out = ctx.path("ert-garbage.h5")
    rc, _, err, _ = ctx.run([ctx.rtrace, "run", "--ert", garbage, "--tracer", "none", "-o", out, "--"] + app)
    if rc == 2:
        single, line = one_line(err)
        expect(single and garbage in line and not os.path.exists(out), f"--ert garbage: exit 2 but {err!r}")
        ctx.row(g, "`--ert FILE` with random bytes", 1, f"exit 2 before anything runs: \"{line[:150]}\"")
    else:
        p = point(ctx, out)
        expect(rc == 0 and any("no ceilings" in l for l in p["log"]), f"--ert garbage: exit {rc}, log {p['log']}; {err}")
        ctx.row(g, "`--ert FILE` with random bytes", 1, "points run without ceilings; the point log and stderr say why")

    # Files that crash or hang libhdf5 1.10.8 itself (found by the run_file
    # fuzzer). Every command that reads a user's file must answer one line and
    # exit 2, leave no temp file behind and not touch the file: `validate`,
    # `--resume` and `--ert FILE` read it in a child with a time limit first,
    # `analyze` and `merge` run in a crash-guarded child.
    import gzip
    known = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "known-libhdf5", "run_file")
    names = sorted(n for n in os.listdir(known) if n.endswith(".h5.gz")) if os.path.isdir(known) else []
    expect(names, f"no inputs under {known}: the checks of files that break libhdf5 would not run")
    env = dict(ctx.env, RTRACE_VALIDATE_TIMEOUT="3")
    for name in names:
        src = ctx.path("damaged-" + name[:-3])
        with gzip.open(os.path.join(known, name)) as fin, open(src, "wb") as fout:
            fout.write(fin.read())
        digest = sha(src)
        commands = [
            ("`rtrace validate --timeout 3`", lambda f, o: [ctx.rtrace, "validate", "--timeout", "3", f]),
            ("`rtrace analyze`", lambda f, o: [ctx.rtrace, "analyze", f, "-q", "--json", o + ".json"]),
            ("`rtrace merge`", lambda f, o: [ctx.rtrace, "merge", f, f, "-o", o]),
            ("`rtrace --resume`", None),
            ("`rtrace run --ert FILE`", lambda f, o: [ctx.rtrace, "run", "--ert", f, "--tracer", "none", "-o", o, "--"]
             + app),
        ]
        for what, argv_of in commands:
            out = ctx.path("damaged-out.h5")
            f = src
            if argv_of is None:  # --resume works on (a copy of) the damaged file itself
                f = ctx.path("damaged-resume.h5")
                shutil.copyfile(src, f)
                argv = [ctx.rtrace, "run", "--resume", "-o", f]
            else:
                argv = argv_of(src, out)
            before = set(os.listdir(ctx.work))
            # Under a sanitizer, each command's reports go to their own
            # directory: a crash inside libhdf5 is expected there, one with an
            # rtrace frame above libhdf5 fails the case.
            reports = ctx.path(f"reports-{name[:-6]}-{what.split()[1].strip('`')}")
            shutil.rmtree(reports, ignore_errors=True)
            run_env = with_sanitizer_options(env, log_dir=reports) if sanitized() else env
            if sanitized():
                os.makedirs(reports)
            try:
                rc, _, err, secs = ctx.run(argv, timeout=20, env=run_env)
            except subprocess.TimeoutExpired:
                ctx.kill_leftovers()
                raise Failure(f"{what} on {name}: still running after 20 s (killed by the test); the time limit "
                              f"(--timeout 3 / RTRACE_VALIDATE_TIMEOUT=3) did not stop it")
            single, line = one_line(err)
            line = line.replace(ctx.work + "/", "")
            left = sorted(set(os.listdir(ctx.work)) - before - {"damaged-out.h5.json", os.path.basename(reports)})
            in_hdf5, ours = sanitizer_reports(reports, ctx.rtrace) if sanitized() else ([], [])
            expect(not ours, f"{what} on {name}: sanitizer report(s) in rtrace's code: {ours}")
            if in_hdf5 and argv_of is not None and what in ("`rtrace analyze`", "`rtrace merge`") and rc not in (0, 2):
                # ASan/UBSan intercept the crash inside libhdf5 and exit 1
                # with their report: the guard sees an ordinary exit. The
                # report itself was checked above: inside libhdf5.
                for name_left in left:
                    gone = os.path.join(ctx.work, name_left)
                    shutil.rmtree(gone) if os.path.isdir(gone) else os.remove(gone)
                ctx.row(g, f"{what} on a file that breaks libhdf5 ({name[:-6]})", 1,
                        f"sanitizer build: exit {rc}; the sanitizer's report is inside libhdf5 ({in_hdf5[0]})")
                continue
            expect(rc == 2 and single, f"{what} on {name}: exit {rc}, stderr {err!r}")
            expect(secs < 15, f"{what} on {name}: took {secs:.1f} s; the time limit is 3 s")
            expect(not left, f"{what} on {name}: files left behind: {left}")
            expect(sha(f) == digest, f"{what} on {name}: the input file was modified")
            ctx.row(g, f"{what} on a file that breaks libhdf5 ({name[:-6]})", 1,
                    f"exit 2 after {secs:.1f} s, input untouched, nothing left behind: \"{line[:150]}\"")
            if f != src:
                os.remove(f)

    # Arguments reach the app verbatim: no shell anywhere.
    out = ctx.path("verbatim.h5")
    tricky = "$(touch " + ctx.path("pwned") + "); `id` | ; > x 'q' \"d\" * \\n"
    rc, _, err, _ = ctx.run(base + ["-o", out, "--", "/bin/echo", tricky])
    p = point(ctx, out)
    expect(rc == 0 and p["stdout_tail"] == tricky + "\n", f"verbatim argv: got {p.get('stdout_tail')!r}")
    expect(not os.path.exists(ctx.path("pwned")), "verbatim argv: a shell ran the argument")
    ctx.row(g, "shell metacharacters in the app's arguments", 1, "passed verbatim via execve, nothing interpreted")


# ------------------------------------------------------------------ time limits
def case_time_limits(ctx):
    """RTRACE_VALIDATE_TIMEOUT bounds every pre-read of a user's file: a file on
    which libhdf5 loops forever gets exit 2 and one line within the limit from
    `--resume`, `--ert FILE` and `validate` (no --timeout flag: the variable)."""
    import gzip
    g = "bad input"
    known = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "known-libhdf5", "run_file")
    hangs = sorted(n for n in os.listdir(known) if n.startswith("hang-") and n.endswith(".h5.gz"))
    expect(hangs, f"no hang-*.h5.gz inputs under {known}")
    limit = 2
    env = dict(ctx.env, RTRACE_VALIDATE_TIMEOUT=str(limit))
    app = [ctx.app, "ok"]
    for name in hangs[:1]:
        src = ctx.path(name[:-3])
        with gzip.open(os.path.join(known, name)) as fin, open(src, "wb") as fout:
            fout.write(fin.read())
        digest = sha(src)
        out = ctx.path("limits-out.h5")
        for what, argv in (
                ("`rtrace run --resume`", [ctx.rtrace, "run", "--resume", "--ert", "none", "--tracer", "none", "-o", src,
                                           "--"] + app),
                ("`rtrace run --ert FILE`", [ctx.rtrace, "run", "--ert", src, "--tracer", "none", "-o", out, "--"] + app),
                ("`rtrace validate`", [ctx.rtrace, "validate", src])):
            try:
                rc, _, err, secs = ctx.run(argv, timeout=limit + 13, env=env)
            except subprocess.TimeoutExpired:
                ctx.kill_leftovers()
                raise Failure(f"{what} on {name} with RTRACE_VALIDATE_TIMEOUT={limit}: still running after "
                              f"{limit + 13} s (killed by the test): the limit was not applied")
            single, line = one_line(err)
            expect(rc == 2 and single, f"{what} on {name}: exit {rc}, stderr {err!r}")
            expect(f"within {limit} s" in line, f"{what} on {name}: the message does not name the {limit} s limit: {line}")
            expect(limit - 0.5 <= secs < limit + 5, f"{what} on {name}: exit after {secs:.1f} s, the limit is {limit} s")
            expect(sha(src) == digest, f"{what} on {name}: the input file was modified")
            expect(not os.path.exists(out), f"{what} on {name}: {out} was created")
            ctx.wait_no_leftovers(3)
            expect(not ctx.leftovers(), f"{what} on {name}: processes left: {ctx.leftovers()}")
            ctx.row(g, f"{what} with RTRACE_VALIDATE_TIMEOUT={limit} on a file that hangs libhdf5 ({name[:-6]})", 1,
                    f"exit 2 after {secs:.1f} s: \"{line.replace(ctx.work + '/', '')[:150]}\"")


CASES = {"time-limits": case_time_limits, "app": case_app, "timeout": case_timeout, "flood": case_flood, "kill": case_kill, "kill-index": case_kill_index,
         "disk-full": case_disk_full, "bad-input": case_bad_input}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--rtrace", required=True)
    ap.add_argument("--app", required=True)
    ap.add_argument("--inspect", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--have-analyze", action="store_true", help="this rtrace was built with `rtrace analyze`")
    args = ap.parse_args()
    ctx = Context(args)
    status, reason = 0, ""
    t0 = time.monotonic()
    try:
        CASES[args.case](ctx)
    except Skip as e:
        status, reason = SKIP, str(e)
        ctx.row("skipped", args.case, 0, "skipped: " + reason)
    except KnownBug as e:
        strict = os.environ.get("RTRACE_FAULTS_STRICT") == "1"
        try:
            entry = listed_bug(args.case, str(e))
        except (Failure, OSError, ValueError, KeyError) as bad_list:
            entry, strict = None, True
            print("FAIL:", bad_list)
        if entry and not strict:
            status, reason = SKIP, f"KNOWN BUG (listed, open item {entry['open_item']}: {entry['reason']}): {e}"
        else:
            status = 1
            reason = "KNOWN BUG: " + str(e) + ("" if entry else
                                               f" -- not listed in {os.path.relpath(KNOWN_BUGS)}: a bug is a failure")
        print(("FAIL: " if status == 1 else "") + reason)
        if status == 1:
            ctx.rows.append({"group": "failed", "fault": args.case, "trials": 0, "outcome": "FAILED: " + reason,
                             "passed": False})
    except Failure as e:
        status, reason = 1, str(e)
        ctx.rows.append({"group": "failed", "fault": args.case, "trials": 0, "outcome": "FAILED: " + reason,
                         "passed": False})
        print("FAIL:", reason)
    finally:
        ctx.kill_leftovers()
    os.makedirs(args.results_dir, exist_ok=True)
    with open(os.path.join(args.results_dir, args.case + ".json"), "w") as f:
        json.dump({"case": args.case, "rtrace": os.path.abspath(args.rtrace), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "status": {0: "passed", 1: "failed", SKIP: "skipped"}[status] if
                   not (status == SKIP and reason.startswith("KNOWN BUG")) else "known bug",
                   "reason": reason, "seconds": round(time.monotonic() - t0, 1), "rows": ctx.rows}, f, indent=1)
    if status == SKIP:
        print("SKIP:", reason)
    return status


if __name__ == "__main__":
    sys.exit(main())
