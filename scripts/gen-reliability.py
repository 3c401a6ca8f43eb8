#!/usr/bin/env python3
"""Renders docs/reliability.md from what the hardening runs recorded.

  faults:     <build>/faults-results/*.json      (ctest -L faults, tests/faults/faults.py)
  fuzzing:    <fuzz build>/fuzz-work/*/runs.jsonl and findings.txt   (bench/fuzz.sh)
  sanitizers: <asan build>/sanitize-results.txt  (scripts/sanitize.sh)
              <tsan build>/sanitize-results.txt  (scripts/sanitize.sh --tsan)
  mutations:  <mutation dir>/results.json        (scripts/mutation-check.sh, full runs only)

usage: scripts/gen-reliability.py [--build build] [--fuzz-build build-fuzz]
                                  [--asan-build build-asan] [--tsan-build build-tsan]
                                  [--mutation-dir build-mutation] [--only SECTION,...]
                                  [-o docs/reliability.md]
Nothing is typed in by hand: a run that did not happen shows as "not run".
--only faults,fuzz,sanitizers,mutations,notes regenerates those sections and
keeps the others as they are in the output file (a machine that ran only some
of the jobs updates only their sections).
"""
import argparse
import collections
import glob
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FUZZ_TARGETS = collections.OrderedDict([
    ("sweep_spec", "`--sweep` grammar: `parse_sweep_axis`, `make_sweep_plan` (axes per line, zip/repeat flags)"),
    ("run_file", "`validate_file` and every store reader (`read_points`, `read_axes`, `read_run_metadata`, "
                 "`read_machine`, `read_ceilings`, `read_output`, `read_rank`) on mutated run, ERT and trace files"),
    ("tracer_strings", "the tracer's record decoding (`unpack_strings`, the rank-to-rank encoding), round trip checked"),
    ("ert_import", "`--ert FILE` ceiling import (`read_ceilings_from`) on mutated ERT and run files"),
    ("options_json", "`--resume` restoring options from the run file's JSON (`RunOptions::fill_from_json`)"),
    ("analysis_load", "`rtrace analyze` input loading (`analysis::load_run`) on mutated run files"),
])


def md(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def faults_section(build):
    out = ["## Fault injection (`ctest -L faults`)", ""]
    files = sorted(glob.glob(os.path.join(build, "faults-results", "*.json")))
    if not files:
        return out + [f"not run (no results under `{build}/faults-results`)", ""]
    cases = [json.load(open(f)) for f in files]
    total = sum(c["seconds"] for c in cases)
    binaries = sorted({c.get("rtrace", "?") for c in cases})
    dates = sorted({c.get("date", "?") for c in cases})
    out += [f"Recorded by `tests/faults/faults.py` ({dates[0]}; rtrace binary {', '.join(f'`{b}`' for b in binaries)}): "
            f"{len(cases)} cases, {total:.0f} s in all. "
            + ", ".join(f"`faults_{c['case']}` {c['status']} ({c['seconds']:.0f} s)" for c in cases) + ".", ""]
    out += ["| group | fault or bad input | trials | outcome | result |", "|---|---|---|---|---|"]
    rows = [r for c in cases for r in c["rows"]]
    order = ["app misbehaves", "app hangs", "rtrace killed", "output filesystem", "bad input", "skipped", "failed"]
    rows.sort(key=lambda r: order.index(r["group"]) if r["group"] in order else len(order))
    for r in rows:
        result = r.get("result") or ("pass" if r["passed"] else "FAIL")
        if result != "pass" and not result.startswith("skipped"):
            result = f"**{result}**"
        out.append(f"| {md(r['group'])} | {md(r['fault'])} | {r['trials']} | {md(r['outcome'])} | {result} |")
    return out + [""]


def fuzz_section(fuzz_build):
    out = ["## Fuzzing (libFuzzer + ASan + UBSan, `bench/fuzz.sh TARGET SECONDS`)", ""]
    out += ["| target | what | runs | wall | CPU | longest run (wall / CPU) | inputs | coverage (edges) "
            "| findings in rtrace | crashes inside libhdf5 |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    hdf5_summaries = collections.Counter()
    for target, what in FUZZ_TARGETS.items():
        work = os.path.join(fuzz_build, "fuzz-work", target)
        runs = []
        if os.path.exists(os.path.join(work, "runs.jsonl")):
            runs = [json.loads(l) for l in open(os.path.join(work, "runs.jsonl")) if l.strip()]
        if not runs:
            out.append(f"| `{target}` | {what} | 0 | not run (see the notes) | | | | | | |")
            continue
        wall = sum(r["wall_s"] for r in runs)
        cpu = sum(r["cpu_s"] for r in runs)
        inputs = sum(r["inputs"] for r in runs)
        cov = max(r["coverage"] for r in runs)
        longest = max(runs, key=lambda r: (r["cpu_s"], r["wall_s"]))  # the run that got the most CPU
        ours = hdf5 = 0
        findings = os.path.join(work, "findings.txt")
        if os.path.exists(findings):
            for line in open(findings):
                parts = line.rstrip("\n").split("\t") + ["", "", ""]
                if parts[0] == "rtrace":
                    ours += 1
                elif parts[0] == "libhdf5":
                    hdf5 += 1
                    frame = parts[3] if not parts[3].startswith("/") else "(unnamed frame)"
                    hdf5_summaries[(parts[2].replace(" after", "").replace(" on", ""), frame)] += 1
        out.append(f"| `{target}` | {what} | {len(runs)} | {wall / 60:.1f} min | {cpu / 60:.1f} min "
                   f"| {longest['wall_s'] / 60:.1f} / {longest['cpu_s'] / 60:.1f} min ({longest['date'][:10]}) "
                   f"| {inputs} | {cov} | {ours} | {hdf5} |")
    out += ["", "Wall time is what each fuzzer was given (`nice` on a 2-core machine shared with other builds); "
            "CPU time is what it got; the longest-run column is the single run that counts for the 10-minute goal. Findings are the distinct artifacts of the last run of each target, replayed and "
            "classified by the first stack frame outside the sanitizer and fuzzer runtime (`tests/fuzz/classify.py`).", ""]
    if hdf5_summaries:
        out += ["Crashes inside libhdf5 (Debian 12's HDF5 1.10.8) on corrupted files, by kind and function:", ""]
        for (kind, fn), n in sorted(hdf5_summaries.items()):
            out.append(f"- {kind} in `{fn}`: {n} input(s)")
        out.append("")
    return out


def sanitizer_section(asan_build, tsan_build):
    out = ["## Sanitizers (`scripts/sanitize.sh`, `scripts/sanitize.sh --tsan`)", ""]
    for what, build in (("AddressSanitizer + UndefinedBehaviorSanitizer: unit and integration tests", asan_build),
                        ("ThreadSanitizer: the tracer's unit tests (its buffers, name table and rank state under "
                         "threads)", tsan_build)):
        path = os.path.join(build, "sanitize-results.txt")
        out += [f"{what}:", ""]
        if not os.path.exists(path):
            out += [f"not run (no `{os.path.relpath(path, ROOT)}`)", ""]
            continue
        lines = [l.rstrip() for l in open(path)]
        partial = any(" -R " in l for l in lines[:1])
        out += ["```"] + lines + ["```", ""] + (
            ["This run was limited with `-R` to the tests whose executables were built at the time (a partial run); "
             "the full job is `scripts/sanitize.sh` without arguments.", ""] if partial else [])
    return out


def mutation_section(mutation_dir):
    out = ["## Mutation check (`scripts/mutation-check.sh`)", "",
           "Each file of `tests/mutations/` is a realistic bug; the check applies it to a scratch copy, rebuilds "
           "what it touches, runs the tests named in the file and expects at least one to fail (`killed`). CI runs a "
           "rotating subset (`.ci/run`); the table is the last full run.", ""]
    path = os.path.join(mutation_dir, "results.json")
    if not os.path.exists(path):
        return out + [f"not run (no `{os.path.relpath(path, ROOT)}`)", ""]
    r = json.load(open(path))
    if not r.get("full"):
        return out + [f"the last run (`{os.path.relpath(path, ROOT)}`, {r['date']}) was a subset of "
                      f"{r['selected']} of {r['total']}: run `scripts/mutation-check.sh` without arguments", ""]
    out += [f"{r['date']}, commit `{r['commit']}`{' plus uncommitted changes' if r.get('dirty') else ''}: "
            f"**{r['killed']}/{r['total']} killed**, {r['seconds']} s.", "",
            "| mutation | component | the bug | tests | result | by |", "|---|---|---|---|---|---|"]
    for m in r["results"]:
        result = m["outcome"] if m["outcome"] == "killed" else f"**{m['outcome']}**"
        out.append(f"| `{m['name']}` | {md(m['component'])} | {md(m['what'])} | `{md(m['tests'])}` | {result} "
                   f"| {md(m['detail'][:200])} |")
    return out + [""]


# What the numbers above mean and what is still open. Kept here, next to the
# renderer, so the generated page is complete; update it with the findings.
NOTES = """## Notes

* **How the fault table is produced.** Each row is written by
  `tests/faults/faults.py` while the check runs; a row says `pass` only when
  every assertion of that row held (exit status, one-line message naming the
  problem, file valid via `rtrace::store::validate_file`, completed points
  read back whole, no process carrying the test's marker variable left in
  `/proc/*/environ`). A case that finds a bug fails, unless the bug is listed
  with its reason and the open item tracking it in
  `tests/faults/known-bugs.json` (then it exits 77, skipped with that reason;
  `RTRACE_FAULTS_STRICT=1` fails it anyway). A command that runs past its
  time limit on a damaged file fails the case: there are no "gap" passes.
  `faults_time-limits` checks that `--resume`, `--ert FILE` and `validate`
  honour `RTRACE_VALIDATE_TIMEOUT` on a file that makes libhdf5 loop.
  `scripts/sanitize.sh` runs these cases under ASan+UBSan too: every
  process writes its sanitizer reports to a file (`log_path`), any report
  fails the job, and the reports of the files that break libhdf5 must be
  inside libhdf5 (classified like the fuzz findings).
* **libhdf5 on corrupted files.** Every crash and hang the fuzzers found so
  far is inside Debian 12's libhdf5 1.10.8: mostly reading a variable-length
  string through a corrupted global-heap reference (`H5HG_read`: SEGV, a
  negative or garbage `memcpy` length, overlapping `memcpy`, an endless loop
  in the global-heap cache protect path), also endless loops on corrupted
  superblock/metadata sizes (`H5F_sizeof_size`), an allocation of a garbage
  size (out-of-memory) and one heap over-read in `H5VM_memcpyvv` (a compact
  dataset whose stored size exceeds its buffer). rtrace's store calls
  `H5Aread`/`H5Dread` correctly; the library trusts the file. The over-read
  does not crash outside ASan: the values read are garbage and nothing
  (libhdf5's checksums included) can tell; it is the one case rtrace cannot
  turn into an error. So no command reads a user's file in a process
  that such a crash would take down without a word:
  `rtrace validate` reads each file whole (every table row) in a child
  process with a time limit (`--timeout`, else RTRACE_VALIDATE_TIMEOUT,
  default 600 s); `--resume`, `--ert FILE` and cached ERT results go through
  the same time-limited child check before the file is opened in-process;
  `rtrace analyze` and `rtrace merge` run in a crash-guarded child
  (`cli/crash_guard.cpp`) that turns a crash into one line naming the last
  file opened, removes the child's temp files and exits 2. Rows "on a file
  that breaks libhdf5" above run every such command on each input in
  `tests/fuzz/known-libhdf5/`. What is left: `analyze` and `merge` have no
  time limit, so a file that makes libhdf5 loop forever *while they read it*
  would keep them running until interrupted (SIGINT/SIGTERM stop them
  cleanly); none of the known inputs does (they fail earlier with a clear
  error), and `rtrace validate` finds such a file within its limit.
  Files damaged the way rtrace's own failures damage them (killed writers,
  full disks, truncation) are handled: see the fault table.
* **Fuzz triage** (`tests/fuzz/classify.py`): a finding is rtrace's when a
  frame of rtrace's code (namespace `rtrace::`, a source file of the
  repository, the fuzz target, or unsymbolised code of the fuzz binary) lies
  anywhere between the crash and the first libhdf5 frame, or when no libhdf5
  frame is on the stack; `bench/fuzz.sh` replays every artifact (once per
  binary) and lists the `slow` ones (a timeout that finishes on replay).
* **The 9 "rtrace" findings of the first `run_file` run** (2026-11-21) came
  from a classifier that stopped at libc's string routines; replayed with
  the fixed `tests/fuzz/classify.py` (2026-11-22), the 14 oldest artifacts of
  that directory all crash or hang inside libhdf5. No fuzzer has found a
  crash, hang, leak or sanitizer report in rtrace's own code.
* **ERT JSON import**: rtrace imports ceilings only from HDF5 ERT/run files
  (`--ert FILE`), which `ert_import` fuzzes; the only JSON rtrace reads back
  is the options JSON of `--resume` (`options_json`).
* **SIGKILL of rtrace while a point runs.** The app's main process dies with
  rtrace (PR_SET_PDEATHSIG); the rest of its tree (children, children that
  called `setsid`, MPI ranks) is stopped by the keeper process rtrace forks
  beside each app, which SIGKILLs the app's process group and every process
  carrying the point's `RTRACE_TREE_TOKEN` when rtrace's end of its pipe
  closes without "done" (docs/launcher.md). The run file is unaffected and
  `--resume` reruns that point. A process that scrubs its environment *and*
  leaves the process group escapes both marks; inside Slurm the step's cgroup
  still ends it.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--fuzz-build", default=os.path.join(ROOT, "build-fuzz"))
    ap.add_argument("--asan-build", default=os.path.join(ROOT, "build-asan"))
    ap.add_argument("--tsan-build", default=os.path.join(ROOT, "build-tsan"))
    ap.add_argument("--mutation-dir", default=os.path.join(ROOT, "build-mutation"))
    ap.add_argument("--only", default="", help="comma-separated sections to regenerate; the others are kept")
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "docs", "reliability.md"))
    a = ap.parse_args()
    lines = ["# rtrace reliability: every fault and bad input tried", "",
             "Generated by `scripts/gen-reliability.py` from the runs of `ctest -L faults` (tests/faults), "
             "`bench/fuzz.sh` (tests/fuzz) and `scripts/sanitize.sh`; do not edit by hand. "
             "Regenerate: run those, then `scripts/gen-reliability.py --build <build dir>`.", ""]
    sections = collections.OrderedDict([
        ("faults", lambda: faults_section(a.build)),
        ("fuzz", lambda: fuzz_section(a.fuzz_build)),
        ("sanitizers", lambda: sanitizer_section(a.asan_build, a.tsan_build)),
        ("mutations", lambda: mutation_section(a.mutation_dir)),
        ("notes", lambda: NOTES.splitlines())])
    only = [x for x in a.only.split(",") if x]
    unknown = [x for x in only if x not in sections]
    if unknown:
        ap.error(f"--only: unknown section(s) {unknown}; expected {list(sections)}")
    old = {}
    if only and os.path.exists(a.output):
        # Split the current page at its "## " headings, in section order.
        current, key = [], None
        headings = {"## Fault": "faults", "## Fuzz": "fuzz", "## Sanitizers": "sanitizers", "## Mutation": "mutations",
                    "## Notes": "notes"}
        for line in open(a.output).read().splitlines():
            k = next((v for h, v in headings.items() if line.startswith(h)), None)
            if k:
                key = k
                old[key] = []
            if key:
                old[key].append(line)
    for name, make in sections.items():
        if not only or name in only or name not in old:
            lines += make()
        else:
            lines += old[name] + ([""] if old[name] and old[name][-1] else [])
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(a.output, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
