#!/usr/bin/env python3
"""Mutation check: does the test suite fail when rtrace breaks?

Each file tests/mutations/*.mut describes one realistic bug (format below).
For each, this script applies it to a scratch copy of the working tree, builds
the targets it names there (own build directory, ccache when available), runs
the tests it names with ctest, and reports the mutation `killed` (a test
failed) or `SURVIVED` (every test passed: the suite cannot see the bug).

A mutation that no longer applies (its line is gone or ambiguous) or does not
compile is an error, reported loudly: fix the .mut file, never skip it.

Before the mutants, the same tests run on the unmutated copy and must pass:
otherwise a "kill" would prove nothing.

usage: scripts/mutation-check.sh [--rotate K] [--together] [--check] [--list] [NAME...]
  NAME...      only these mutations (file names without .mut, or unique prefixes)
  --rotate K   K mutations chosen by the day (CI: a different subset each day,
               every mutation within ceil(N/K) days)
  --together   apply the selected mutations all at once and run all their
               tests; lists which tests fail (each bug should be caught on its own)
  --check      only check that every mutation still applies to the working
               tree (no build, seconds); exit 1 naming those that do not
  --list       list the mutations and exit
Environment:
  RTRACE_MUTATION_DIR   scratch directory (default <repo>/build-mutation); the
                        copy is <dir>/tree, its build <dir>/tree/build
  RTRACE_BUILD_JOBS     compile jobs (default: nproc)
  RTRACE_MUTATION_CMAKE_ARGS  extra cmake arguments
Results: <dir>/results.json (read by scripts/gen-reliability.py) and a table
on stdout. Exit 0 when every selected mutation applied and was killed.

.mut format (one mutation per file; `#` lines are comments):
  what: one line describing the bug
  component: which part of rtrace it breaks
  file: path/relative/to/repo          (starts an edit; several allowed)
  - text of one line as it is now      (matched after stripping whitespace;
  + text that replaces it               must match exactly one line of file)
  build: targets to build               (space-separated)
  tests: ctest -R regex of the tests that must catch it
"""
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUT_DIR = os.path.join(ROOT, "tests", "mutations")


class MutationError(Exception):
    pass


def parse(path):
    m = {"name": os.path.basename(path)[:-4], "edits": [], "build": [], "tests": "", "what": "", "component": ""}
    edit = None
    for n, raw in enumerate(open(path), 1):
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("- ") or line.startswith("+ "):
            if edit is None:
                raise MutationError(f"{path}:{n}: `-`/`+` before any `file:`")
            if line[0] == "-":
                edit["pairs"].append([line[2:], None])
            else:
                if not edit["pairs"] or edit["pairs"][-1][1] is not None:
                    raise MutationError(f"{path}:{n}: `+` without its `-` line")
                edit["pairs"][-1][1] = line[2:]
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "file":
            edit = {"file": value, "pairs": []}
            m["edits"].append(edit)
        elif key == "build":
            m["build"] = value.split()
        elif key in ("tests", "what", "component"):
            m[key] = value
        else:
            raise MutationError(f"{path}:{n}: unknown key `{key}`")
    if not m["edits"] or not m["tests"] or not m["what"]:
        raise MutationError(f"{path}: needs what:, file: with -/+ lines, and tests:")
    for e in m["edits"]:
        if not e["pairs"] or any(new is None for _, new in e["pairs"]):
            raise MutationError(f"{path}: every `-` line of {e['file']} needs its `+` line")
    return m


def tracked_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]


def sync_tree(tree):
    """Copies the working tree into `tree`, keeping the originals' mtimes so
    that an unchanged file is not rebuilt; only files whose bytes differ are
    copied again."""
    copied = 0
    for rel in tracked_files():
        src, dst = os.path.join(ROOT, rel), os.path.join(tree, rel)
        try:
            with open(src, "rb") as a, open(dst, "rb") as b:
                if a.read() == b.read():
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
        copied += 1
    return copied


def apply(m, tree):
    """Applies every edit; returns {path: original bytes}. Raises MutationError
    naming the line that no longer matches."""
    originals = {}
    try:
        for e in m["edits"]:
            path = os.path.join(tree, e["file"])
            if not os.path.isfile(path):
                raise MutationError(f"{m['name']}: {e['file']} does not exist")
            if path not in originals:
                originals[path] = open(path, "rb").read()
            lines = open(path).read().split("\n")
            for old, new in e["pairs"]:
                hits = [i for i, l in enumerate(lines) if l.strip() == old.strip()]
                if len(hits) != 1:
                    raise MutationError(f"{m['name']}: {e['file']}: the line `{old.strip()}` occurs {len(hits)} times "
                                        f"(want exactly 1): the code changed; update tests/mutations/{m['name']}.mut")
                indent = lines[hits[0]][: len(lines[hits[0]]) - len(lines[hits[0]].lstrip())]
                lines[hits[0]] = indent + new.strip()
            with open(path, "w") as f:
                f.write("\n".join(lines))
    except Exception:
        restore(originals)
        raise
    return originals


def restore(originals):
    for path, data in originals.items():
        with open(path, "wb") as f:
            f.write(data)  # mtime now: the next build recompiles it (a ccache hit)


def run(cmd, log, **kw):
    with open(log, "ab") as f:
        f.write(("\n$ " + " ".join(cmd) + "\n").encode())
        f.flush()
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, **kw).returncode


def configure(tree, build, log):
    if os.path.exists(os.path.join(build, "CMakeCache.txt")):
        return
    args = ["cmake", "-S", tree, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DRTRACE_ENABLE_TESTS=ON",
            "-DRTRACE_ENABLE_CUDA=OFF"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    args += os.environ.get("RTRACE_MUTATION_CMAKE_ARGS", "").split()
    if run(args, log) != 0:
        raise MutationError(f"cmake configure of the scratch copy failed (log: {log})")


def build_targets(build, targets, log):
    if not targets:
        return 0
    jobs = os.environ.get("RTRACE_BUILD_JOBS", str(os.cpu_count() or 2))
    return run(["cmake", "--build", build, "-j", jobs, "--target"] + targets, log)


def ctest(build, regex, log):
    """Returns (rc, failed test names, number of tests run)."""
    out_log = log + ".ctest"
    rc = run(["ctest", "--test-dir", build, "-R", regex, "--no-tests=error", "--output-on-failure", "--timeout", "600",
              "-j", os.environ.get("RTRACE_TEST_JOBS", "2")], out_log)
    text = open(out_log, errors="replace").read().split("\n$ ctest")[-1]
    failed = re.findall(r"^\s*\d+ - (\S+) \((?:Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)",
                        text, re.M)
    ran = re.search(r"tests passed, \d+ tests failed out of (\d+)", text)
    skipped = re.findall(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.+\*+Skipped", text, re.M)
    with open(log, "a") as f:
        f.write(text)
    return rc, failed, int(ran.group(1)) if ran else 0, skipped


def ctest_each(build, chosen, log):
    """ctest once per distinct tests regex of `chosen` (ctest's regex engine
    allows only 10 groups, too few for the union); summed results."""
    rc_all, failed_all, ran_all, skipped_all = 0, [], 0, []
    for regex in dict.fromkeys(m["tests"] for m in chosen):
        rc, failed, ran, skipped = ctest(build, regex, log)
        rc_all = rc_all or rc
        failed_all += [t for t in failed if t not in failed_all]
        ran_all += ran
        skipped_all += skipped
    return rc_all, failed_all, ran_all, skipped_all


def select(mutations, names, rotate):
    if names:
        chosen = []
        for n in names:
            hits = [m for m in mutations if m["name"] == n] or [m for m in mutations if m["name"].startswith(n)]
            if len(hits) != 1:
                raise MutationError(f"`{n}` matches {len(hits)} mutations; --list shows them")
            chosen += hits
        return chosen
    if rotate:
        day = datetime.date.today().toordinal()
        start = (day * rotate) % len(mutations)
        return [mutations[(start + i) % len(mutations)] for i in range(min(rotate, len(mutations)))]
    return mutations


def run_together(chosen, tree, build, log):
    """All selected mutations at once: which of their tests fail?"""
    originals = {}
    try:
        for m in chosen:
            for path, data in apply(m, tree).items():
                originals.setdefault(path, data)
        if build_targets(build, sorted({t for m in chosen for t in m["build"]}), log) != 0:
            print(f"mutation-check: the combined mutants do not compile (log: {log})", file=sys.stderr)
            return 2
        rc, failed, ran, skipped = ctest_each(build, chosen, log)
    except MutationError as e:
        print(f"mutation-check: ERROR: {e}", file=sys.stderr)
        return 2
    finally:
        restore(originals)
        build_targets(build, sorted({t for m in chosen for t in m["build"]}), log)
    print(f"mutation-check: {len(chosen)} mutations together: {len(failed)} of {ran} tests failed"
          + (f", {len(skipped)} skipped" if skipped else ""))
    for m in chosen:
        mine = [t for t in failed if re.search(m["tests"], t)]
        print(f"  {m['name']:28s} caught by: {', '.join(mine) or 'NOTHING'}")
    return 0 if rc != 0 and all(any(re.search(m["tests"], t) for t in failed) for m in chosen) else 1


def main(argv):
    rotate, names, list_only, together, check_only = 0, [], False, False, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--rotate":
            rotate = int(argv[i + 1])
            i += 2
            continue
        if a == "--list":
            list_only = True
        elif a == "--together":
            together = True
        elif a == "--check":
            check_only = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print(f"mutation-check: unknown option `{a}`", file=sys.stderr)
            return 2
        else:
            names.append(a)
        i += 1
    files = sorted(f for f in os.listdir(MUT_DIR) if f.endswith(".mut"))
    try:
        mutations = [parse(os.path.join(MUT_DIR, f)) for f in files]
        chosen = select(mutations, names, rotate)
    except MutationError as e:
        print(f"mutation-check: {e}", file=sys.stderr)
        return 2
    if check_only:
        bad = []
        for m in chosen:
            try:
                for e in m["edits"]:
                    path = os.path.join(ROOT, e["file"])
                    if not os.path.isfile(path):
                        raise MutationError(f"{m['name']}: {e['file']} does not exist")
                    lines = open(path).read().split("\n")
                    for old, _ in e["pairs"]:
                        n = sum(l.strip() == old.strip() for l in lines)
                        if n != 1:
                            raise MutationError(f"{m['name']}: {e['file']}: the line `{old.strip()}` occurs {n} times "
                                                f"(want exactly 1)")
            except MutationError as e:
                bad.append(str(e))
        for b in bad:
            print(f"mutation-check: DOES NOT APPLY: {b}", file=sys.stderr)
        print(f"mutation-check: {len(chosen) - len(bad)}/{len(chosen)} mutations apply to the working tree")
        return 1 if bad else 0
    if list_only:
        for m in mutations:
            print(f"{m['name']:28s} [{m['component']}] {m['what']}")
        return 0
    scratch = os.environ.get("RTRACE_MUTATION_DIR", os.path.join(ROOT, "build-mutation"))
    tree = os.path.join(scratch, "tree")
    build = os.path.join(tree, "build")
    os.makedirs(tree, exist_ok=True)
    log = os.path.join(scratch, "mutation-check.log")
    open(log, "w").close()
    t0 = time.monotonic()
    print(f"mutation-check: {len(chosen)} of {len(mutations)} mutations; scratch copy {tree} (log {log})", flush=True)
    results, errors = [], 0
    try:
        n = sync_tree(tree)
        print(f"  synced the scratch copy ({n} files changed)", flush=True)
        configure(tree, build, log)
        targets = sorted({t for m in chosen for t in m["build"]})
        tb = time.monotonic()
        if build_targets(build, targets, log) != 0:
            raise MutationError(f"the unmutated scratch copy does not build (log: {log})")
        print(f"  built {len(targets)} targets of the unmutated copy in {time.monotonic() - tb:.0f} s", flush=True)
        tb = time.monotonic()
        rc, failed, ran, skipped = ctest_each(build, chosen, log)
        if rc != 0:
            raise MutationError(f"the unmutated copy fails its tests ({', '.join(failed) or 'see the log'}): "
                                f"a kill would prove nothing (log: {log})")
        print(f"  baseline: {ran} tests pass on the unmutated copy ({time.monotonic() - tb:.0f} s)", flush=True)
    except MutationError as e:
        print(f"mutation-check: ERROR: {e}", file=sys.stderr)
        return 2
    if together:
        return run_together(chosen, tree, build, log)
    for m in chosen:
        tm = time.monotonic()
        r = {"name": m["name"], "what": m["what"], "component": m["component"], "tests": m["tests"]}
        try:
            originals = apply(m, tree)
        except MutationError as e:
            r.update(outcome="does not apply", detail=str(e))
            errors += 1
        else:
            try:
                if build_targets(build, m["build"], log) != 0:
                    r.update(outcome="does not compile", detail=f"see {log}")
                    errors += 1
                else:
                    rc, failed, ran, skipped = ctest(build, m["tests"], log)
                    if rc != 0:
                        r.update(outcome="killed", detail="failed: " + ", ".join(failed or ["(see log)"]))
                    else:
                        r.update(outcome="SURVIVED", detail=f"{ran} tests passed" +
                                 (f", {len(skipped)} skipped: {', '.join(skipped)}" if skipped else ""))
            finally:
                restore(originals)
        r["seconds"] = round(time.monotonic() - tm, 1)
        results.append(r)
        print(f"  {r['outcome']:16s} {m['name']:28s} {r['seconds']:6.0f} s  {r['detail'][:160]}", flush=True)
    # Leave the scratch build matching the working tree again (mutated objects out).
    build_targets(build, sorted({t for m in chosen for t in m["build"]}), log)
    killed = sum(r["outcome"] == "killed" for r in results)
    summary = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                        text=True).stdout.strip(),
               "dirty": bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "-uno"],
                                            stdout=subprocess.PIPE, text=True).stdout.strip()),
               "selected": len(chosen), "total": len(mutations), "killed": killed,
               "full": len(chosen) == len(mutations), "seconds": round(time.monotonic() - t0), "results": results}
    with open(os.path.join(scratch, "results.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"mutation-check: {killed}/{len(results)} killed, {errors} errors, "
          f"{sum(r['outcome'] == 'SURVIVED' for r in results)} survived ({summary['seconds']} s)")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
