#!/usr/bin/env python3
"""Which sanitizer reports fail scripts/sanitize.sh, and which are the one
documented exception.

usage: scripts/sanitizer_reports.py REPORT_FILE...
Prints one tab-separated line per file that holds a report:
  counted  FILE  PROCESS
  ignored  FILE  PROCESS  REASON
and nothing for a file without one (a process that opened its log and
reported nothing).

The exception (the sanitized tracer cannot live in a system binary; see
scripts/sanitize.sh): an MPI app started without mpirun spawns Open MPI's
orted (singleton init), which inherits LD_PRELOAD. The tracer stays inert
there, but orted's exit faults in code that is not ours: ASan's own module
destructor in the uninstrumented process, or Open MPI's finalize calling into
an MCA plugin it already unloaded. The process is known by the name ASan gives
it with log_exe_name=1 (`==orted==PID==` and the file name), not by its stack:
the unwinder starts at a PC in an unloaded module and may go astray (CI,
2026-11-29: libc, libdw and __run_exit_handlers instead of opal_finalize and
orte_daemon). A report of such a process that holds a frame of rtrace's code
is counted all the same (ASan's module destructor compiled into rtrace's
library is ASan's code, not rtrace's).
"""
import os
import re
import sys

REPORT = re.compile(r"ERROR: (?:AddressSanitizer|LeakSanitizer)|runtime error:|WARNING: ThreadSanitizer")
# `==NAME==PID==ERROR:` with log_exe_name=1, `==PID==ERROR:` without.
PROCESS = re.compile(r"^==(?:([^=\s]+)==)?\d+==")
# A frame in rtrace's code: its namespace, one of its source directories, or
# one of its libraries unsymbolised.
RTRACE_FRAME = re.compile(r"^\s+#\d+ .*(?:\bin rtrace::|/(?:launcher|tracer|store|analysis|ert|cli|counts)/src/|"
                          r"\(\S*librtrace[\w.-]*\.so)")
# ASan's module destructor, which GCC compiles into every instrumented
# library as `_sub_D_00099_0` (priority 99, ASan's): ASan's code, not
# rtrace's, though it sits in librtrace_tracer.so (CI, 2026-11-29: orted's
# exit faulted in it, unregistering the tracer's globals).
ASAN_MODULE_DTOR = re.compile(r"^\s+#\d+ \S+ in _sub_D_00099_\d+ ")
SYSTEM_PROCESSES = {"orted": "a singleton's orted exiting (system binary, tracer inert; ASan's or Open MPI's finalize)"}


def process_name(text, path):
    """The executable's name from the report's header, else from the file
    name (`asan.NAME.PID`), else None."""
    for line in text.splitlines():
        m = PROCESS.match(line)
        if m and m.group(1):
            return m.group(1)
    parts = os.path.basename(path).split(".")
    if len(parts) >= 3 and parts[-1].isdigit():
        return ".".join(parts[1:-1])
    return None


def classify(text, path):
    """None (no report), ('counted', name) or ('ignored', name, reason)."""
    if not REPORT.search(text):
        return None
    name = process_name(text, path)
    reason = SYSTEM_PROCESSES.get(name or "")
    if reason and not any(RTRACE_FRAME.match(l) and not ASAN_MODULE_DTOR.match(l) for l in text.splitlines()):
        return ("ignored", name, reason)
    return ("counted", name or "?")


def main(argv):
    for path in argv[1:]:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"sanitizer_reports.py: {path}: {e.strerror}", file=sys.stderr)
            return 1
        verdict = classify(text, path)
        if verdict:
            print("\t".join((verdict[0], path) + verdict[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
