#!/usr/bin/env python3
"""Replays fuzz artifacts and says where each one fails.

usage: classify.py FUZZ_BINARY ARTIFACT...
Prints one tab-separated line per artifact: WHERE, NAME, KIND, FRAME, where
WHERE is `rtrace` (the first frame outside the sanitizer/fuzzer runtime and
libc is rtrace code or unknown), `libhdf5` (it is inside libhdf5), `slow`
(a timeout artifact that finishes on replay: load, not a hang) or
`gone` (no longer reproduces).
"""
import os
import re
import subprocess
import sys

RUNTIME = re.compile(r"__interceptor_|__asan|__sanitizer|__ubsan|__lsan|fuzzer::|LLVMFuzzer|libc\.so|__libc_|"
                     r"libstdc\+\+|\bmalloc\b|\bfree\b|operator new|operator delete|\bmemcpy\b|\bmemmove\b|"
                     r"\bstrlen\b|\babort\b|\braise\b|__GI_|libpthread|__mem\w+|sysdeps/")
FRAME = re.compile(r"^\s+#\d+ 0x[0-9a-f]+\s+(?:in (\S+)\s+)?\(?([^)\s]*)")


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
    lines = out.splitlines()
    err = next((i for i, l in enumerate(lines) if "ERROR:" in l or "runtime error:" in l), None)
    if err is None:
        return ("slow" if timeout else "gone"), "", ""
    m = re.search(r"ERROR: (?:AddressSanitizer|LeakSanitizer|libFuzzer|UndefinedBehaviorSanitizer): ([\w-]+(?: [\w-]+)?)",
                  lines[err])
    kind = m.group(1) if m else lines[err].strip()[:60]
    for l in lines[err + 1:]:
        f = FRAME.match(l)
        if not f:
            continue
        fn, where = f.group(1) or "", f.group(2) or ""
        if RUNTIME.search(fn) or RUNTIME.search(where) or "fuzz_" in where and not fn:
            continue
        if "libhdf5" in where:
            return "libhdf5", kind, fn or where
        return "rtrace", kind, (fn or "?") + " " + where
    return "rtrace", kind, "(no frame)"


def main():
    binary = sys.argv[1]
    for a in sys.argv[2:]:
        where, kind, frame = classify(binary, a)
        print(f"{where}\t{os.path.basename(a)}\t{kind}\t{frame}", flush=True)


if __name__ == "__main__":
    main()
