#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# report.html in a real browser: headless Chromium renders it to a PNG,
# dumps the DOM it built (the tables and a chart with data points must be
# there), and reports no console message: the page has no script, so any
# message is an error Chromium found in the page (an invalid SVG attribute,
# a resource it tried to fetch).
#
# The screenshot is kept at $PC_BUILD_DIR/tests/report/report.png to look at.
. "$PC_SOURCE_DIR/tests/report/lib.sh"
chromium=${CHROMIUM:-/usr/bin/chromium}
keep="$PC_BUILD_DIR/tests/report"

[ -x "$chromium" ] || { echo "no chromium at $chromium (Debian package chromium)"; exit 77; }

# run_chromium LOG ARGS... : one headless run with a fresh profile, nothing
# reached over the network. Root needs --no-sandbox; it does no harm
# otherwise for a local file.
run_chromium() {
  local log=$1; shift
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
    --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-extensions --user-data-dir="$(mktemp -d -p "$tmp")" \
    --enable-logging=stderr --v=0 "$@" 2>"$log"
}

# Chromium must start at all: a page with nothing wrong in it.
echo '<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>x</body></html>' \
  >"$tmp/ok.html"
if ! run_chromium "$tmp/ok.log" --dump-dom "file://$tmp/ok.html" >"$tmp/ok.dom" \
   || ! grep -q '<body>x' "$tmp/ok.dom"; then
  echo "chromium cannot run here: $(grep -v -i dbus "$tmp/ok.log" | tail -3)"
  exit 77
fi
# The console check must be able to fail: a page with an SVG error must
# produce a CONSOLE line in the log, else the check below proves nothing.
echo '<!DOCTYPE html><html><body><svg width="10" height="10"><circle r="-1"/></svg></body></html>' \
  >"$tmp/probe.html"
run_chromium "$tmp/probe.log" --dump-dom "file://$tmp/probe.html" >/dev/null
grep -q 'CONSOLE' "$tmp/probe.log" \
  || bad "an SVG error produced no CONSOLE line: console errors cannot be detected this way"

"$pc" report "$fx/results.json" "$fx/noise-pmqos.json" --baseline "$fx/results.json" \
  --tune "$fx/tune.json" \
  -o "$tmp/r" >/dev/null || { echo "FAIL: percore report failed"; exit 1; }
page="file://$tmp/r/report.html"

run_chromium "$tmp/shot.log" --screenshot="$tmp/report.png" --window-size=1400,3000 "$page" \
  || bad "chromium failed to take the screenshot"
if [ "$(head -c 8 "$tmp/report.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  mkdir -p "$keep" && cp "$tmp/report.png" "$keep/report.png"
  echo "ok: screenshot $(wc -c <"$tmp/report.png") bytes, kept at $keep/report.png"
else
  bad "no PNG screenshot"
fi

run_chromium "$tmp/dom.log" --dump-dom "$page" >"$tmp/dom.html" || bad "chromium failed to dump the DOM"
tables=$(grep -o '<table>' "$tmp/dom.html" | wc -l)
[ "$tables" -ge 8 ] && echo "ok: $tables tables" || bad "only $tables tables in the DOM"
for h in 'Key findings' 'System' 'Micro benchmarks' 'Integration' 'Architecture scaling' \
         'Noise experiment' 'Comparison with the baseline'; do
  grep -q "<h2>$h</h2>" "$tmp/dom.html" || bad "no section '$h' in the DOM"
done
svgs=$(grep -o '<svg ' "$tmp/dom.html" | wc -l)
circles=$(grep -o '<circle ' "$tmp/dom.html" | wc -l)
# a polyline with at least two points: "x,y x,y"
lines=$(grep -oE '<polyline [^>]*points="[0-9.]+,[0-9.]+( [0-9.]+,[0-9.]+)+"' "$tmp/dom.html" | wc -l)
[ "$svgs" -ge 1 ] && [ "$circles" -ge 4 ] && [ "$lines" -ge 4 ] \
  && echo "ok: $svgs charts, $lines lines, $circles data points" \
  || bad "charts: $svgs svg, $lines polylines with points, $circles circles"

for log in "$tmp/shot.log" "$tmp/dom.log"; do
  if grep 'CONSOLE' "$log"; then
    bad "the page logged console messages (above)"
  fi
done
[ "$fail" -eq 0 ] && echo "ok: no console messages"
exit $fail
