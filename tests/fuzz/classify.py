#!/usr/bin/env python3
"""Replays fuzz artifacts and says where each one fails.

usage: classify.py FUZZ_BINARY ARTIFACT...
Prints one tab-separated line per artifact: WHERE, NAME, KIND, FRAME, where
WHERE is
  `rtrace`  a frame of rtrace's code (namespace rtrace::, a source file of this
            repository, the fuzz target, or an unsymbolised frame of the fuzz
            binary, which holds rtrace's code) lies anywhere between the crash
            and the first libhdf5 frame, or the stack never reaches libhdf5;
            a replay that does not finish is rtrace's too (a hang);
  `libhdf5` the crash is inside libhdf5 and every frame above the first
            libhdf5 frame belongs to the sanitizer/fuzzer runtime, libc,
            libstdc++ or another system library that libhdf5 called;
  `slow`    a timeout artifact that finishes on replay (load, not a hang:
            reported, never dropped);
  `gone`    it no longer reproduces.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = re.compile(r"__interceptor_|__asan|__sanitizer|__ubsan|__lsan|fuzzer::|libc\.so|__libc_|"
                     r"libstdc\+\+|\bmalloc\b|\bfree\b|operator new|operator delete|\bmemcpy\b|\bmemmove\b|"
                     r"\bstrlen\b|\babort\b|\braise\b|__GI_|libpthread|__mem\w+|sysdeps/|compiler-rt/")
FRAME = re.compile(r"^\s+#\d+ 0x[0-9a-f]+\s+(?:in (\S+)\s+)?\(?([^)\s]*)")


def frame_kind(fn, where, binary):
    """'hdf5', 'rtrace', 'runtime' or 'other' for one stack frame."""
    if "libhdf5" in where or re.match(r"H5[A-Z0-9_]", fn):
        return "hdf5"
    if "rtrace::" in fn or fn.startswith("LLVMFuzzerTestOneInput"):
        return "rtrace"
    if fn and (RUNTIME.search(fn) or RUNTIME.search(where)):
        return "runtime"
    # A source file of this repository, or a binary of one of its builds
    # (unsymbolised code of the fuzz binary included: rtrace's unless proven
    # otherwise).
    if where.startswith(ROOT + "/") or os.path.basename(where.split("+")[0]) == os.path.basename(binary):
        return "rtrace"
    if RUNTIME.search(where):
        return "runtime"
    return "other"


def classify_output(out, binary, timeout):
    lines = out.splitlines()
    err = next((i for i, l in enumerate(lines) if "ERROR:" in l or "runtime error:" in l), None)
    if err is None:
        return ("slow" if timeout else "gone"), "", ""
    m = re.search(r"ERROR: (?:AddressSanitizer|LeakSanitizer|libFuzzer|UndefinedBehaviorSanitizer): ([\w-]+(?: [\w-]+)?)",
                  lines[err])
    kind = m.group(1) if m else lines[err].strip()[:60]
    first_rtrace = None
    for l in lines[err + 1:]:
        if l.startswith("SUMMARY:"):
            break
        f = FRAME.match(l)
        if not f:
            continue
        fn, where = f.group(1) or "", f.group(2) or ""
        k = frame_kind(fn, where, binary)
        if k == "rtrace" and first_rtrace is None:
            first_rtrace = (fn or "?") + " " + where
        if k == "hdf5":
            if first_rtrace:
                return "rtrace", kind, first_rtrace + " (above libhdf5's " + (fn or where) + ")"
            return "libhdf5", kind, fn or where
    return "rtrace", kind, first_rtrace or "(no frame)"


def classify(binary, artifact):
    timeout = os.path.basename(artifact).startswith(("timeout-", "slow-"))
    env = dict(os.environ)
    supp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsan.supp")
    env["LSAN_OPTIONS"] = f"suppressions={supp}:print_suppressions=0"
    env.setdefault("ASAN_OPTIONS", "detect_odr_violation=0")
    args = [binary, "-timeout=" + os.environ.get("RTRACE_FUZZ_REPLAY_TIMEOUT", "20"), "-rss_limit_mb=2048", artifact]
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=180)
        out = p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "rtrace", "hang", "(no stack: killed after 180 s)"
    return classify_output(out, binary, timeout)


def main():
    binary = sys.argv[1]
    for a in sys.argv[2:]:
        where, kind, frame = classify(binary, a)
        print(f"{where}\t{os.path.basename(a)}\t{kind}\t{frame}", flush=True)


if __name__ == "__main__":
    main()
