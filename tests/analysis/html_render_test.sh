#!/bin/bash
# The HTML report as users see it (issue 25): rendered by headless Chromium,
# measured by html_render_check.js (text boxes, overlaps, the labels the
# browser lays out), checked here. Charts: efficiency axis named for what it
# plots, speedup ticks between 1 and 2, a log axis when one function dwarfs
# the rest, nice tick values, legends that stay distinguishable (full names in
# tooltips and the function table), percentages without scientific notation.
# Issue 30: legends wrap and are never cut, one legend entry per series,
# unreliable ceilings dashed and labelled, a busy step says its load, no
# tracer frames in the flame graph.
#   html_render_test.sh RTRACE RTRACE_SYNTH DIR
# Skips (77) when Chromium is not installed (scripts/setup.sh installs it).
set -u
RTRACE=$1 SYNTH=$2 DIR=$3
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${RTRACE_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "SKIP: no chromium on PATH (apt-get install chromium; scripts/setup.sh does)"; exit 77; }
rm -rf "$DIR" && mkdir -p "$DIR" && cd "$DIR" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

render() {  # render HTML OUT.json: the measurements of the page as Chromium laid it out
  python3 - "$1" "$HERE/html_render_check.js" <<'PY' || return 1
import sys
page, js = sys.argv[1], open(sys.argv[2]).read()
s = open(page).read()
open(page + ".checked.html", "w").write(s.replace("</body>", "<script>\n" + js + "\n</script></body>"))
PY
  # As root, Chromium needs --no-sandbox; the network flags keep it from
  # reaching for Google's services on a closed network.
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$DIR/profile-$RANDOM" --virtual-time-budget=5000 \
    --dump-dom "file://$DIR/$1.checked.html" > "$1.dom" 2> "$1.chromium.log" ||
    { tail -5 "$1.chromium.log"; return 1; }
  python3 - "$1.dom" "$2" <<'PY'
import html, json, sys
d = open(sys.argv[1]).read()
i = d.rfind('<pre id="rtrace-check">')
j = d.find("</pre>", i)
if i < 0 or j < 0:
    sys.exit("no measurements in the rendered page")
json.dump(json.loads(html.unescape(d[i + len('<pre id="rtrace-check">'):j])), open(sys.argv[2], "w"))
PY
}

# Checks every report must pass; extra Python checks as the third argument.
# r["charts"][i]: title, axis_titles, ticks, legends (tspans joined), legend_tooltips,
# values, texts (every text), tooltips (every <title>), dashes (stroke-dasharray of dashed lines).
check() {  # check MEASUREMENTS.json NAME [EXTRA]
  python3 - "$1" "$2" "${3:-}" <<'PY'
import json, math, re, sys
r, name, extra = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
problems = []
if r["clipped"]:
    problems.append("text cut off at a chart's edge: %s" % r["clipped"][:5])
if r["overlaps"]:
    problems.append("tick labels overlap: %s" % r["overlaps"][:5])
if r["scientific"]:
    problems.append("percentages in scientific notation: %s" % r["scientific"][:5])
def nice(label):
    try:
        v = float(label)
    except ValueError:
        return True  # "threads=2" and the like
    if v == 0:
        return True
    m = abs(v) / 10 ** math.floor(math.log10(abs(v)))
    return any(abs(m - k) < 1e-6 for k in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))
for c in r["charts"]:
    # Every chart but a flame graph has axes and a legend the checks can find
    # (a chart whose texts lost their roles would pass the checks below unseen).
    if not c["title"].startswith("Flame graph") and not (c["ticks"] and c["axis_titles"] and c["legends"]):
        problems.append("%s: no tick, axis title or legend to check (class tick/axis-title/legend)" % c["title"])
    bad = [t for t in c["ticks"] if not nice(t)]
    # Concurrency ticks are the measured values, whatever they are: only value axes must be nice.
    if bad and not all(re.fullmatch(r"[0-9]+", t) for t in bad):
        problems.append("%s: ticks a reader cannot use: %s" % (c["title"], bad))
    if len(set(c["legends"])) != len(c["legends"]):
        problems.append("%s: legend entries read the same: %s" % (c["title"], c["legends"]))
    # Legends wrap, they are never shortened (issue 30: "cache-capacity at r\u2026ers").
    cut = [l for l in c["legends"] if "\u2026" in l or re.search(r"\w\.\.\w", l)]
    if cut:
        problems.append("%s: legends cut with an ellipsis: %s" % (c["title"], cut))
if extra:
    exec(extra)
if problems:
    print("\n".join("FAIL (%s): %s" % (name, p) for p in problems))
    sys.exit(1)
print("%s: %d charts checked as rendered" % (name, len(r["charts"])))
PY
}

# 1. What the issue's reports got wrong, in one synthetic run (threads=1,2).
"$SYNTH" report-demo -o demo.h5 || fail "rtrace-synth report-demo"
"$RTRACE" analyze demo.h5 --html demo.html -q || fail "rtrace analyze demo.h5"
render demo.html demo.json || fail "Chromium could not render demo.html"
check demo.json report-demo '
charts = {c["title"]: c for c in r["charts"]}
sc = charts.get("Speedup and efficiency")
if not sc:
    problems.append("no speedup chart")
else:
    if any("Parallel efficiency" in t for t in sc["axis_titles"]):
        problems.append("the speedup/concurrency panel is titled parallel efficiency: %s" % sc["axis_titles"])
    if not any("Global efficiency" in t for t in sc["axis_titles"]):
        problems.append("the efficiency panel does not say what it plots: %s" % sc["axis_titles"])
    between = [t for t in sc["ticks"] if re.fullmatch(r"1\.[0-9]+", t)]
    if not between:
        problems.append("the speedup axis labels only its ends: %s" % sc["ticks"])
    if "1.53x" not in sc["values"]:
        problems.append("the measured speedup is not labelled: %s" % sc["values"])
    if len([l for l in sc["legends"] if "direction" in l]) != 2:
        problems.append("kernel legends: %s" % sc["legends"])
fn = charts.get("Scaling by function (sampled)")
if not fn or not any("log" in t for t in fn["axis_titles"]):
    problems.append("one function dwarfs the rest but the axis is not logarithmic: %s" % (fn and fn["axis_titles"]))
for full in ("physics::radiation::transport_sweep_over_angles_for_energy_group_low(double*, int)",
             "physics::radiation::transport_sweep_over_angles_for_energy_group_high(double*, int)"):
    if full not in r["text"]:
        problems.append("the full name %r is nowhere in the page" % full)
if "<0.01%" not in r["text"]:
    problems.append("the tiny MPI share does not read <0.01%")
'
# 2. Every chart of the demo run (rooflines, trajectories, POP) passes the generic checks.
"$SYNTH" cpu-demo -o cpu.h5 || fail "rtrace-synth cpu-demo"
"$RTRACE" analyze cpu.h5 --html cpu.html -q || fail "rtrace analyze cpu.h5"
render cpu.html cpu.json || fail "Chromium could not render cpu.html"
check cpu.json cpu-demo || exit 1
# 3. Issue 30: the counted application is one series of the speedup chart
# (its legend listed "application" twice).
"$SYNTH" counts-demo -o counts.h5 || fail "rtrace-synth counts-demo"
"$RTRACE" analyze counts.h5 --html counts.html -q || fail "rtrace analyze counts.h5"
render counts.html counts.json || fail "Chromium could not render counts.html"
check counts.json counts-demo '
sc = [c for c in r["charts"] if c["title"] == "Speedup and efficiency"]
if not sc or sum(l == "application" for l in sc[0]["legends"]) != 1:
    problems.append("the speedup legend does not list the application once: %s" % (sc and sc[0]["legends"]))
' || exit 1
# 4. Issue 30: a busy point whose ERT marked its ceilings unreliable (reasons
# longer than the file keeps), a long step diagnosis, the tracer in the stacks.
"$SYNTH" busy-demo -o busy.h5 || fail "rtrace-synth busy-demo"
"$RTRACE" analyze busy.h5 --html busy.html -q || fail "rtrace analyze busy.h5"
render busy.html busy.json || fail "Chromium could not render busy.html"
check busy.json busy-demo '
charts = {c["title"]: c for c in r["charts"]}
two = charts.get("Roofline at threads=2")
one = charts.get("Roofline at threads=1")
if not two or not one:
    problems.append("no roofline per configuration: %s" % list(charts))
else:
    roofs = [t for t in two["texts"] if re.search(r"(GB/s|GFLOP/s) \(unreliable\)$", t)]
    if len(roofs) < 2 or "2,4" not in two["dashes"]:
        problems.append("unreliable ceilings at threads=2 not drawn dashed and labelled: %s %s" % (roofs, two["dashes"]))
    if any("unreliable" in t for t in one["texts"]):
        problems.append("the reliable ceilings at threads=1 are labelled unreliable")
traj = [c for c in r["charts"] if c["title"].startswith("Trajectory of md::pair::")]
if not traj or not any("cache-capacity at L1d (DRAM AI falls)" in l for l in traj[0]["legends"]):
    problems.append("the step legend does not read whole: %s" % (traj and traj[0]["legends"]))
if "(unreliable)" not in r["text"]:
    problems.append("no table labels the unreliable bound")
if "rtrace::tracer" in r["text"] or any("rtrace::tracer" in t for c in r["charts"] for t in c["texts"] + c["tooltips"]):
    problems.append("the tracer'"'"'s own frames are in the report")
if not re.search(r"busy machine: other processes took 53% of the point.s cores at 2", r["text"]):
    problems.append("the busy step does not carry the measured load")
for t in re.findall(r"\([^()]*\)", r["text"]):
    if re.search(r"\w \)$|\(\w+ \)", t):
        problems.append("a parenthesis cut inside: %r" % t)
' || exit 1
echo "OK"
