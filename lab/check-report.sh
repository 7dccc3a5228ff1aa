#!/usr/bin/env bash
# check-report.sh REPORT.html [SCREENSHOT.png]
#
# Opens a stampede report.html in headless Chromium at 1,400 px wide with no
# network (a fresh network namespace when unshare works, a dead proxy
# otherwise) and checks that every plot was drawn: one uPlot canvas per
# chart element and no script error on the console. It then measures the
# laid-out page (check-report/geometry.js) and fails when a table is cut at
# the window's edge, a folder name or policy wrapped inside a word, or two
# event labels of a chart overlap. With a second argument it also saves a
# full-page screenshot to look at. CHECK_REPORT_DOM=FILE keeps the measured
# page's DOM, with the figures in <pre id="geometry">.
#
# Needs chromium (apt-get install -y chromium). Exit status 0 when the page
# is fine, 1 when a plot is missing, 2 when it cannot run.
set -euo pipefail

page=${1:?usage: check-report.sh REPORT.html [SCREENSHOT.png]}
shot=${2:-}
[ -f "$page" ] || { echo "check-report: no such file: $page" >&2; exit 2; }
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "check-report: chromium not found (apt-get install -y chromium)" >&2; exit 2; }

profile=$(mktemp -d)
out=$(mktemp -d)
trap 'rm -rf "$profile" "$out"' EXIT
url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"

flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
  --no-first-run --no-default-browser-check --disable-sync --user-data-dir="$profile"
  --proxy-server=http://127.0.0.1:9 --proxy-bypass-list='<-loopback>'
  --enable-logging=stderr --v=0 --virtual-time-budget=10000 --window-size=1400,1000
  --disable-quic)

# No network: a namespace of its own when we may make one.
run=()
if unshare -n true 2>/dev/null; then run=(unshare -n); fi

# One load of the page with check-report/geometry.js appended, in a copy
# (the report itself is untouched): the DOM after the scripts ran, and the
# layout as a person sees it.
measured="$out/measured.html"
sed '$d' "$page" >"$measured" # the closing </html>
{ echo '<script>'; cat "$(dirname "$0")/check-report/geometry.js"; echo '</script></html>'; } >>"$measured"
"${run[@]}" "$chrome" "${flags[@]}" --dump-dom "file://$measured" >"$out/dom.html" 2>"$out/console.log" || {
  echo "check-report: chromium failed:" >&2; tail -5 "$out/console.log" >&2; exit 2; }
[ -n "${CHECK_REPORT_DOM:-}" ] && cp "$out/dom.html" "$CHECK_REPORT_DOM"

charts=$(grep -o 'data-chart="[^"]*"' "$out/dom.html" | wc -l)
canvases=$(grep -o '<canvas' "$out/dom.html" | wc -l)
failed=$(grep -c '<p class="note drawn">plot failed' "$out/dom.html" || true)
errors=$(grep -E 'Uncaught|SyntaxError|ReferenceError|TypeError' "$out/console.log" || true)
echo "check-report: $page: $charts chart element(s), $canvases canvas(es)"

status=0
if [ "$charts" -eq 0 ] || [ "$canvases" -lt "$charts" ] || [ "$failed" -gt 0 ]; then
  echo "check-report: FAIL: expected a canvas per chart, got $canvases for $charts ($failed failed)" >&2
  status=1
fi
if [ -n "$errors" ]; then
  echo "check-report: FAIL: script errors:" >&2; echo "$errors" >&2
  status=1
fi

if [ -n "$shot" ]; then
  # The page's height, to shoot it whole.
  height=$(grep -o '<section' "$out/dom.html" | wc -l)
  height=$(( 900 + charts * 180 + height * 600 ))
  "${run[@]}" "$chrome" "${flags[@]/--window-size=1400,1000/--window-size=1400,$height}" \
    --hide-scrollbars --screenshot="$(realpath -m "$shot")" "$url" 2>/dev/null || true
  [ -s "$shot" ] && echo "check-report: screenshot $shot (1400x$height)"
fi
geometry=$(sed -n 's:.*<pre id="geometry">\(.*\)</pre>.*:\1:p' "$out/dom.html")
echo "check-report: geometry $geometry"
if [ -z "$geometry" ]; then
  echo "check-report: FAIL: the page was not measured" >&2
  status=1
elif ! grep -q '"cut":\[\],"midword":\[\],"overlaps":\[\],"outside":\[\]' <<<"$geometry"; then
  echo "check-report: FAIL: a table is cut, a name wrapped inside a word, or event labels overlap (see geometry)" >&2
  status=1
fi
[ $status -eq 0 ] && echo "check-report: ok"
exit $status
