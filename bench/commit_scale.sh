#!/usr/bin/env bash
# Commit cost of a sweep whose points are big: 16 points of ~64 MB of trace
# data each, through the real launcher commit path (`rtrace run --tracer cpu`
# collects the ranks.h5 that the app writes into $RTRACE_TRACE_DIR and
# commits it). Prints the time of each commit (`-v`) and the bytes rtrace
# wrote, side by side with the data size.
#
#   bench/commit_scale.sh [--build DIR] [--points N] [--mb M] [--dir DIR]
#
# Targets (exit 1 when missed): the median of the last 3 commits <= 1.5x the
# median of the first 3 (single commits are printed too; on a shared 2-core VM
# one sample can be a writeback stall), and rtrace's bytes written <= 1.2x
# the data size. Bytes written: write_bytes of rtrace and everything it reaped
# (wait4 rusage, ru_oublock), minus what the apps wrote themselves (each
# reports its /proc/self/io). Needs ~N x M MB free in --dir (default /tmp);
# everything is removed at the end.
set -euo pipefail

build=""
points=16
mb=64
dir="${TMPDIR:-/tmp}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --points) points="$2"; shift 2 ;;
    --mb) mb="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "commit_scale.sh: unknown argument \`$1\`" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${build:-$root/build}"
rtrace="$build/bin/rtrace"
synth="$build/bin/rtrace-merge-synth"
[[ -x "$rtrace" && -x "$synth" && -f "$build/lib/librtrace_tracer.so" ]] || {
  echo "commit_scale.sh: need rtrace, rtrace_tracer and rtrace-merge-synth built under \`$build\`" >&2; exit 2; }

scratch="$(mktemp -d "$dir/rtrace-commit.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

exec /usr/bin/python3 - "$rtrace" "$synth" "$scratch" "$points" "$mb" <<'PY'
import os, re, statistics, subprocess, sys, time

rtrace, synth, scratch, points, mb = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

# Kernel rows per rank for ~mb MB: measure a small file, scale.
probe = os.path.join(scratch, "probe.h5")
subprocess.run([synth, "ranks", probe, "1", "--kernels", "20000"], check=True)
kernels = max(1000, int(20000 * mb * 1e6 / os.path.getsize(probe)))
os.remove(probe)

io_log = os.path.join(scratch, "app-io.log")
out = os.path.join(scratch, "run.h5")
env = dict(os.environ, RTRACE_SYNTH_IO_LOG=io_log, RTRACE_LOG="error")
# The app: the synthetic generator writing the collective trace file the
# tracer would write at MPI_Finalize (argv goes to execve; sh only expands
# $RTRACE_TRACE_DIR, which the launcher sets per point).
app = ["/bin/sh", "-c", 'exec "$0" ranks "$RTRACE_TRACE_DIR/ranks.h5" 1 --kernels "$1"', synth, str(kernels)]
argv = [rtrace, "run", "-v", "--sweep", f"env:BENCH_POINT=1..{points}", "--ert", "none", "--tracer", "cpu",
        "-o", out, "--"] + app
t0 = time.monotonic()
proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read().decode(errors="replace")
_, status, usage = os.wait4(proc.pid, 0)
wall = time.monotonic() - t0
rc = os.waitstatus_to_exitcode(status)
if rc != 0:
    print(f"commit_scale.sh: rtrace exit {rc}:\n{err}", file=sys.stderr)
    sys.exit(2)

commits = [float(m.group(2)) for m in re.finditer(r"point (\d+): committed in ([0-9.]+) ms", err)]
apps = [tuple(int(x) for x in l.split()) for l in open(io_log)]
if len(commits) != points or len(apps) != points:
    print(f"commit_scale.sh: expected {points} commits and app reports, got {len(commits)} and {len(apps)}:\n{err}",
          file=sys.stderr)
    sys.exit(2)
data = sum(size for _, size in apps)
app_written = sum(w for w, _ in apps)
total_written = usage.ru_oublock * 512
rtrace_written = total_written - app_written
on_disk = os.path.getsize(out) + sum(os.path.getsize(os.path.join(out + ".d", f)) for f in os.listdir(out + ".d"))
check = subprocess.run([rtrace, "validate", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

print(f"commit_scale: {points} points x {data / points / 1e6:.1f} MB of trace data ({kernels} kernel rows per point), "
      f"sweep wall {wall:.1f} s")
for i, c in enumerate(commits):
    print(f"  commit {i + 1:2d}: {c:8.1f} ms   ({apps[i][1] / 1e6:.1f} MB)")
first, last = statistics.median(commits[:3]), statistics.median(commits[-3:])
time_ratio = last / first
bytes_ratio = rtrace_written / data
print(f"commit time: first {commits[0]:.1f} ms, last {commits[-1]:.1f} ms (ratio {commits[-1] / commits[0]:.2f}); "
      f"median of first 3 {first:.1f} ms, of last 3 {last:.1f} ms: ratio {time_ratio:.2f} (target <= 1.5)")
print(f"bytes written by rtrace: {rtrace_written / 1e6:.1f} MB for {data / 1e6:.1f} MB of data: ratio {bytes_ratio:.3f} "
      f"(target <= 1.2); run on disk {on_disk / 1e6:.1f} MB (index {os.path.getsize(out) / 1e3:.0f} kB)")
print("validate: " + check.stdout.decode().strip())
ok = time_ratio <= 1.5 and bytes_ratio <= 1.2 and check.returncode == 0
print("commit_scale: " + ("all targets met" if ok else "TARGET MISSED"))
sys.exit(0 if ok else 1)
PY
