#!/bin/sh
# usage: reference_test.sh RTRACE [DEMO_APP|none]
# Issue 32: on a shared host a whole quick run can come out at half the
# machine (a vCPU whose host SMT sibling runs someone else's FMAs: FP64 FMA
# 87.5 GFLOP/s between runs of 162-174), with every check of the run itself
# passed, since nothing in the run disagrees with anything else in it. Here
# the test seam RTRACE_ERT_TEST_SLOWDOWN=2 makes every worker run each timed
# run's kernel twice while counting it once: every ceiling at half speed, for
# the whole run, no worker preempted. Against the machine's reference (the
# first, normal run here) every ceiling must be marked unreliable with the
# numbers and the date, and take the reference's value; a sweep measured that
# way must be analysed on the reference, and the report must say so. The code
# before the reference gave every ceiling of the slowed run as reliable.
set -u
rtrace=$1
demo=${2:-none}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export RTRACE_CACHE_DIR="$dir/cache"  # this test's own: the user's reference is never touched
fail() { echo "FAIL: $*"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU"; exit 77; }
py=
for p in /usr/bin/python3 python3; do command -v "$p" >/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "SKIP: no python3"; exit 77; }

# 1. A run at the machine's speed: the reference.
"$rtrace" ert --threads 2 --quick --quiet --json "$dir/a.json" || fail "the normal run exited $?"
ref=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["empirical"]["metadata"]["reference_file"])' "$dir/a.json")
case "$ref" in "$RTRACE_CACHE_DIR"/ert/reference/*.json) ;; *) fail "reference file $ref not in this test's cache";; esac
# Its reliable ceilings are the reference now. On a busy machine the run may
# be marked (then it is no reference: right, but not what this test is
# about): the test then makes its measured values the reference itself.
"$py" - "$dir/a.json" "$ref" <<'PY' || fail "the reference after the normal run"
import json, os, sys
run, path = json.load(open(sys.argv[1]))["rtrace"]["ceilings"], sys.argv[2]
reliable = {c["name"]: c for c in run if not c["unreliable"]}
doc = json.load(open(path)) if os.path.exists(path) else {"ceilings": []}
kept = {c["name"]: c for c in doc["ceilings"]}
for name, c in reliable.items():
    if name not in kept or abs(kept[name]["value"] - c["value"]) > 1e-6 * c["value"]:
        sys.exit(f"reliable {name} {c['value']:.1f} is not the reference ({kept.get(name)})")
print(f"normal run: {len(reliable)} of {len(run)} ceilings reliable, the reference has {len(kept)}")
if len(kept) < len(run):  # a busy machine: the test's own reference from the measured values
    doc["ceilings"] = [{"name": c["name"], "kind": c["kind"], "unit": c["unit"], "value": c["measured"],
                        "min": c["measured"], "max": c["measured"], "repeats": c["repeats"], "date": "2026-11-28",
                        "measurements": 1} for c in run]
    print("(busy machine: the measured values seeded as the reference)")
# As if a second run had reached it (its runner-up): one run alone is an
# unconfirmed reference, which marks only what falls below 0.75x of it, and a
# normal run slowed by another test beside it (ctest -j2) can leave the
# half-speed run above that. The rule for one run is ert_reference_test's.
for c in doc["ceilings"]:
    c["runner_up"] = {k: c[k] for k in ("value", "min", "max", "repeats", "date")}
json.dump(doc, open(path, "w"))
PY

# 2. A whole run at half speed: every ceiling marked against the reference,
# and the reference used.
RTRACE_ERT_TEST_SLOWDOWN=2 "$rtrace" ert --threads 2 --quick --json "$dir/b.json" >"$dir/b.txt" ||
  fail "the slowed run exited $?"
"$py" - "$dir/b.json" "$ref" <<'PY' || { cat "$dir/b.txt"; fail "the slowed run"; }
import json, sys
run = json.load(open(sys.argv[1]))["rtrace"]["ceilings"]
ref = {c["name"]: c for c in json.load(open(sys.argv[2]))["ceilings"]}
bad = []
for c in run:
    name, r = c["name"], ref.get(c["name"])
    if r is None:
        bad.append(f"{name}: not in the reference")
        continue
    ratio = c["measured"] / r["value"]
    line = f"{name} measured {c['measured']:.1f} = {ratio:.2f}x the reference {r['value']:.1f}"
    if not c["unreliable"]:
        bad.append(line + ": reliable")
    elif c["source"] != "reference" or abs(c["value"] - r["value"]) > 1e-6 * r["value"]:
        bad.append(line + f": the value used is {c['value']:.1f} from {c['source']}, not the reference")
    elif ("measured on this machine on " + r["date"] not in (c["unreliable_reason"] or "") and ratio < 0.8 and
          "measured on a busy machine" not in (c["unreliable_reason"] or "")):
        # (On a busy machine the run's own repeats may disagree by more than
        # the half: the busy verdict marks it then.)
        bad.append(line + f": the reason does not name the reference: {c['unreliable_reason']}")
    else:
        print("ok: " + line + f": marked ({c['unreliable_reason']}), the reference used")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PY
grep -q "(reference of .*; measured " "$dir/b.txt" || { cat "$dir/b.txt"; fail "the table does not say the reference is used"; }

# 2b. A reference above what the hardware can do (a shared cache, an older
# rtrace) never stands in: it is said and dropped. (Step 3 gets the confirmed
# reference back: the run here makes FP64 FMA's entry anew, from one run.)
cp "$ref" "$dir/confirmed.json"
"$py" - "$ref" <<'PY' || fail "writing a bogus reference"
import json, sys
doc = json.load(open(sys.argv[1]))
for c in doc["ceilings"]:
    if c["name"] == "FP64 FMA":
        c["value"] = c["min"] = c["max"] = 1e7
json.dump(doc, open(sys.argv[1], "w"))
PY
"$rtrace" ert --threads 2 --quick --quiet --precision fp64 --json "$dir/c.json" || fail "the run after a bogus reference exited $?"
"$py" - "$dir/c.json" <<'PY' || fail "a reference above the theoretical peak"
import json, sys
d = json.load(open(sys.argv[1]))["rtrace"]
fma = next(c for c in d["ceilings"] if c["name"] == "FP64 FMA")
if fma["source"] != "measured" or fma["value"] > 1e6:
    sys.exit(f"FP64 FMA {fma['value']} from {fma['source']}: the bogus reference was used")
if not any("FP64 FMA 10000000 GFLOP/s is above the theoretical peak" in n for n in d["notes"]):
    sys.exit("no note on the dropped reference: " + "; ".join(d["notes"]))
print("ok: a reference above the theoretical peak is dropped and said")
PY
cp "$dir/confirmed.json" "$ref"

# 3. A sweep measured that way: the analysis uses the reference and says so.
[ "$demo" != none ] && [ -x "$demo" ] || { echo "ok (no demo app: the analysis part skipped)"; exit 0; }
RTRACE_ERT_TEST_SLOWDOWN=2 "$rtrace" --sweep threads=2 --ert quick -o "$dir/run.h5" -- "$demo" triad \
  --size 400000 --iters 3 >"$dir/run.txt" 2>&1 || { cat "$dir/run.txt"; fail "rtrace run exited $?"; }
grep -q "unreliable ceilings: .*(the machine's reference used)" "$dir/run.txt" ||
  { cat "$dir/run.txt"; fail "the progress line does not say the machine's reference was used"; }
"$rtrace" analyze "$dir/run.h5" --json "$dir/an.json" --html "$dir/an.html" >"$dir/an.txt" 2>&1 ||
  { cat "$dir/an.txt"; fail "rtrace analyze exited $?"; }
"$py" - "$dir/an.json" "$ref" <<'PY' || { cat "$dir/an.txt"; fail "the analysis"; }
import json, sys
doc = json.load(open(sys.argv[1]))
ref = {c["name"]: c for c in json.load(open(sys.argv[2]))["ceilings"]}
used = [c for c in doc["configurations"][0]["ceilings"] if c["used"]]
if not used:
    sys.exit("no ceiling used by the roofline")
for c in used:
    r = ref[c["name"]]
    # What stands in: the runner-up once there is one (one run's overshoot is not the machine).
    up = (r.get("runner_up") or {}).get("value", 0)
    standing = up if 0 < up < r["value"] else r["value"]
    if c["source"] != "reference" or abs(c["value"]["value"] - standing) > 1e-6 * standing or not c["marked"]:
        sys.exit(f"{c['name']}: used {c['value']} from {c['source']} (marked {c['marked']}), not the reference {standing}")
    if not c["measured"]["value"] < c["value"]["value"]:
        sys.exit(f"{c['name']}: the point's own value {c['measured']} is not kept")
print("ok: the analysis uses the reference for " + ", ".join(f"{c['name']} {c['value']['value']:.1f} "
      f"(measured {c['measured']['value']:.1f})" for c in used))
PY
grep -q "the machine's reference of" "$dir/an.txt" || { cat "$dir/an.txt"; fail "the text report does not say so"; }
grep -q "machine reference of" "$dir/an.html" || fail "the HTML report does not say so"
echo "ok"
