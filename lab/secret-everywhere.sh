#!/usr/bin/env bash
# secret-everywhere.sh: the secrets acceptance (docs/secrets.md), end to end.
#   lab/secret-everywhere.sh [--via argv|config|both|none] [--keep]
#
# Puts a distinctive secret in every place a user may put one, each place
# its own (BASE + place name, so a leak names its place):
#   header    Authorization: Bearer ...            (loadgen, drill, http)
#   query     ?token=...                           (loadgen, drill, http)
#   userinfo  ws://u:...@ / http://u:...@          (loadgen, drill, http)
#   secrethdr X-Session: ... with --secret-header  (loadgen, drill, http)
#   store     postgres://postgres:...@  (run), ?password=... (bench)
#   deploy    X-Deploy-Key: ..., printed by the drill's --restart-cmd
#   body      --data '{"password":"..."}'          (http)
#   nats      nats://u:...@ of a user/password NATS server of its own
#             (coordinator, agent, and an agent with no server there)
#   push      http://u:...@...?token=... of --pushgateway (pushed, failed)
#   restart   a bare token in --restart-cmd, echoed by the command, and an
#             unsplittable command (unbalanced quote)
#   error paths: a header with CR LF (argv and config), a store URL that
#             does not parse, a libpq key=value store, nested --data
# for run, bench, loadgen, drill, http --clients and a single `http URL`,
# each a small bounded run on loopback (20 clients or fewer, seconds long)
# against `stampede target` (WebSocket and HTTP) and PostgreSQL on
# 127.0.0.1:5432 (db test, trust auth: the password is carried, not
# checked). Meanwhile it samples /proc/*/cmdline of every process every
# 10 ms; at the end it greps each results folder and the captured stdout
# and stderr for the secrets, checks folder modes 0700 and file modes 0600,
# and prints one PASS/FAIL line per command and place.
#
# --via argv types the secrets on stampede's command line (main overwrites
# them in its own argv when it starts: before that, for the first moments
# of the process, they are visible, docs/secrets.md); --via config puts
# every flag but the http command's URL in a --config file of mode 0600,
# the way docs/secrets.md recommends; both (default) runs each; none
# runs only the cases below that have no config form (NATS, Pushgateway,
# --restart-cmd, error paths), typed on the command line.
# The sampler never holds a secret in its own arguments (grep -f FILE).
# A secret seen in a process's command line only in its first 2 s (the
# arguments the kernel was given, before stampede's first package init
# overwrote them) is reported "exec", a later one FAIL. Exit status 0 when
# no line fails. STAMPEDE=path uses a built binary.
set -uo pipefail
cd "$(dirname "$0")/.."
via="argv config" keep=0
while [ $# -gt 0 ]; do
	case $1 in
	--via) via=${2/both/argv config} && via=${via/none/} && shift 2 ;;
	--keep) keep=1 && shift ;;
	*) echo "usage: $0 [--via argv|config|both|none] [--keep]" >&2 && exit 2 ;;
	esac
done
exe=${STAMPEDE:-bin/stampede}
[ -x "$exe" ] || make build >/dev/null
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
umask 022 # the folders' modes must come from stampede, not from here
work=$(mktemp -d /tmp/secret-everywhere-XXXXXX)
base="zq$(od -An -N5 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$base" >"$work/pattern"

tpid=""
cleanup() {
	[ -z "$tpid" ] || kill "$tpid" 2>/dev/null
	[ -z "${spid:-}" ] || kill "$spid" 2>/dev/null
	wait 2>/dev/null
	[ "$keep" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

# The target: WebSocket on /ws and HTTP on any other path.
"$exe" target --addr 127.0.0.1:0 >"$work/target.out" 2>&1 &
tpid=$!
for _ in $(seq 100); do grep -q "127.0.0.1:" "$work/target.out" && break; sleep 0.1; done
addr=$(grep -o "127.0.0.1:[0-9]*" "$work/target.out" | head -1)
[ -n "$addr" ] || { echo "the target did not start:" >&2; cat "$work/target.out" >&2; exit 2; }

# sample FILE: every 10 ms, the PID and command of each process whose
# command line holds a secret, and the secrets' places, until killed.
sample() {
	while :; do
		for f in $(grep -a -l -s -F -f "$work/pattern" /proc/[0-9]*/cmdline); do
			p=${f#/proc/}
			p=${p%/cmdline}
			places=$(tr '\0' '\n' <"$f" 2>/dev/null | grep -a -o "${base}[a-z]*" | sort -u | tr '\n' ' ')
			# the process's age, ms: a hit in its first moments is the
			# argv the kernel was given, before stampede hid it
			age=$(awk -v u="$(cut -d' ' -f1 /proc/uptime)" '{ printf "%d", u * 1000 - $22 * 10 }' "/proc/$p/stat" 2>/dev/null)
			echo "$p $(cat "/proc/$p/comm" 2>/dev/null) ${age:-?}ms ${places//$base/}"
		done
		sleep 0.01
	done
}

ws="ws://u:${base}userinfo@$addr/ws?token=${base}query&room=1"
hurl="http://u:${base}userinfo@$addr/?token=${base}query&page=2"
hurl1="http://u:${base}userinfo@$addr/nope?token=${base}query&page=2" # a 404: the final-status line
store_run="postgres://postgres:${base}store@127.0.0.1:5432/test?sslmode=disable"
store_bench="postgres://postgres@127.0.0.1:5432/test?sslmode=disable&password=${base}store"
body="{\"user\":\"u\",\"password\":\"${base}body\"}"
small=(--clients 20 --duration 3s --chaos "at 1s restart abrupt down=500ms")

# args NAME: the command's arguments; the places it holds.
args() {
	case $1 in
	run) A=(run "${small[@]}" --store "$store_run") P="store" ;;
	bench) A=(bench "${small[@]}" --policies fixed:initial=200ms --store "$store_bench") P="store" ;;
	loadgen) A=(loadgen --url "$ws" --clients 20 --duration 2s -H "Authorization: Bearer ${base}header"
		-H "X-Session: ${base}secrethdr" --secret-header X-Session) P="header query userinfo secrethdr" ;;
	drill) A=(drill --url "$ws" --clients 20 --duration 4s --at 1s -H "Authorization: Bearer ${base}header"
		-H "X-Session: ${base}secrethdr" --secret-header X-Session -H "X-Deploy-Key: ${base}deploy"
		--restart-cmd "echo deploying with key ${base}deploy and token ${base}header; sleep 0.3") P="header query userinfo secrethdr deploy" ;;
	http) A=(http --clients 5 --duration 2s --retries 0 -H "Authorization: Bearer ${base}header" -H "X-Session: ${base}secrethdr"
		--secret-header X-Session --data "$body") P="header query userinfo secrethdr body" ;;
	http1) A=(http --retries 0 -H "Authorization: Bearer ${base}header" -H "X-Session: ${base}secrethdr"
		--secret-header X-Session --data "$body") P="header query userinfo secrethdr body" ;;
	esac
}

# config NAME FILE: A's flags written as a YAML --config file (a flag
# given twice becomes a list); A is left with the command and --config.
config() {
	local cmd=${A[0]} i=1 k v
	declare -A seen=()
	local keys=()
	declare -A vals=()
	while [ $i -lt ${#A[@]} ]; do
		k=${A[$i]#-}
		k=${k#-}
		v=${A[$((i + 1))]}
		[ "$k" = H ] && k=header
		v=${v//\\/\\\\}
		v=${v//\"/\\\"}
		if [ -n "${seen[$k]:-}" ]; then vals[$k]+=", \"$v\""; else
			seen[$k]=1 keys+=("$k") vals[$k]="\"$v\""
		fi
		i=$((i + 2))
	done
	: >"$2"
	chmod 600 "$2"
	for k in "${keys[@]}"; do
		case $k in header | secret-header | policies) echo "$k: [${vals[$k]}]" ;; *) echo "$k: ${vals[$k]}" ;; esac >>"$2"
	done
	A=("$cmd" --config "$2")
}

fails=0 windows=0

# verdicts NAME VIA DIR LOGS PLACES: one row per place and check, the
# command's cmdline samples in LOGS.cmdline, its output in LOGS.stdout and
# LOGS.stderr (and any more LOGS.*.out), its results folder DIR ("-": none).
verdicts() {
	local name=$1 v=$2 dir=$3 logs=$4 place s r late bad
	for place in $5; do
		s="${base}${place}"
		r=PASS
		if grep -q -w "$place" "$logs.cmdline" 2>/dev/null; then
			# late: seen when the process was older than startms
			late=$(grep -w "$place" "$logs.cmdline" | awk -v m="$startms" '$3+0 > m || $3 == "?ms"' | wc -l)
			if [ "$late" -gt 0 ]; then r=FAIL; else r=exec windows=$((windows + 1)); fi
		fi
		row "$name" "$v" "$place" cmdline "$r"
		if [ "$dir" = - ]; then r=n/a; else
			grep -r -a -q -F "$s" "$dir" 2>/dev/null && r=FAIL || r=PASS
		fi
		row "$name" "$v" "$place" files "$r"
		grep -a -q -F "$s" "$logs.stdout" "$logs.stderr" "$logs".*.out 2>/dev/null && r=FAIL || r=PASS
		row "$name" "$v" "$place" logs "$r"
	done
	if [ "$dir" != - ]; then
		if [ ! -d "$dir" ]; then r="FAIL (no folder)"; else
			bad=$( (find "$dir" -type d ! -perm 700; find "$dir" -type f ! -perm 600) | wc -l)
			[ "$bad" = 0 ] && r=PASS || r="FAIL ($bad)"
		fi
		row "$name" "$v" folder 0700/0600 "$r"
	fi
}
# A process whose command line held a secret only in its first startms
# milliseconds showed what the kernel was given at exec, before stampede's
# first package init hid it (docs/secrets.md): verdict "exec", not counted
# as a failure but counted; later than that is a FAIL.
startms=2000
row() { # command via place check verdict
	printf '%-8s %-6s %-10s %-8s %s\n' "$1" "$2" "$3" "$4" "$5"
	case $5 in PASS | n/a | exec) ;; *) fails=$((fails + 1)) ;; esac
}
printf '%-8s %-6s %-10s %-8s %s\n' command via place check verdict

# runone LOGS ARGS...: stampede ARGS under the command-line sampler and a
# 90 s watchdog (not timeout(1): a wrapper would hold the secrets in its
# own arguments); its output in LOGS.stdout and LOGS.stderr, its exit
# status in status.
runone() {
	local logs=$1 rpid wpid
	shift
	sample >"$logs.cmdline" &
	spid=$!
	sleep 0.05
	"$exe" "$@" >"$logs.stdout" 2>"$logs.stderr" &
	rpid=$!
	(sleep 90 && kill "$rpid") 2>/dev/null &
	wpid=$!
	wait "$rpid"
	status=$?
	kill "$wpid" 2>/dev/null
	sleep 0.05
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	spid=""
	echo "# $(basename "$logs"): exit $status" >&2
}

for v in $via; do
	for name in run bench loadgen drill http http1; do
		args "$name"
		dir="$work/$v-$name"
		[ "$name" = http1 ] || A+=(--out "$dir")
		[ "$v" = argv ] || config "$name" "$work/$v-$name.yaml"
		case $name in
		run | bench) A+=(-q) ;;
		loadgen | drill) A+=(-q) ;;
		http) A+=("$hurl") ;;
		http1) A+=("$hurl1") ;;
		esac
		runone "$work/$v-$name" "${A[@]}"
		[ "$name" = http1 ] && dir=-
		verdicts "$name" "$v" "$dir" "$work/$v-$name" "$P"
	done
done

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# NATS: a user/password server of its own (its password in its config
# file, not its arguments), a coordinator that prints its banner and the
# command to run on each host, an agent that joins it, and an agent with
# no server there (its waiting lines and its error).
npid="" gpid=""
extra_cleanup() {
	[ -z "$npid" ] || kill "$npid" 2>/dev/null
	[ -z "$gpid" ] || kill "$gpid" 2>/dev/null
}
trap 'extra_cleanup; cleanup' EXIT
nport=$(freeport)
printf 'listen: 127.0.0.1:%s\nauthorization { user: natsu, password: "%s" }\n' "$nport" "${base}nats" >"$work/nats.conf"
chmod 600 "$work/nats.conf"
nats-server -c "$work/nats.conf" >"$work/nats-server.log" 2>&1 &
npid=$!
nurl="nats://natsu:${base}nats@127.0.0.1:$nport"
for _ in $(seq 50); do grep -q "Server is ready" "$work/nats-server.log" && break; sleep 0.1; done
(
	for _ in $(seq 100); do [ -s "$work/nats.token" ] && break; sleep 0.1; done
	exec "$exe" agent --nats "$nurl" --token-file "$work/nats.token" --name a1 >"$work/extra-nats.agent.out" 2>&1
) &
apid=$!
runone "$work/extra-nats" run --clients 20 --duration 3s --agents 1 --nats "$nurl" --token-file "$work/nats.token" \
	--progress-interval 1s --out "$work/extra-nats"
wait "$apid" 2>/dev/null
grep -q "stampede agent --nats nats://<redacted>@" "$work/extra-nats.stderr" && r=PASS || r="FAIL (no join command)"
row nats argv join-line shown "$r"
grep -q "joined run .* at nats://<redacted>@" "$work/extra-nats.agent.out" && r=PASS || r="FAIL (no joined line)"
row nats argv joined-line shown "$r"
verdicts nats argv "$work/extra-nats" "$work/extra-nats" nats
runone "$work/extra-natsdown" agent --nats "nats://natsu:${base}nats@127.0.0.1:1" --token-file "$work/nats.token" \
	--name a2 --join-timeout 2s
verdicts natsdown argv - "$work/extra-natsdown" nats

# Pushgateway: pushed to one with user info (which it ignores), and to
# a closed port with user info and a ?token= (the error quotes the URL).
gport=$(freeport)
prometheus-pushgateway --web.listen-address="127.0.0.1:$gport" >"$work/pushgateway.log" 2>&1 &
gpid=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$gport/metrics" && break; sleep 0.1; done
runone "$work/extra-push" loadgen --url "ws://$addr/ws" --clients 5 --duration 1s \
	--pushgateway "http://pu:${base}push@127.0.0.1:$gport" --out "$work/extra-push"
grep -q "metrics: pushed to http://<redacted>@127.0.0.1:$gport" "$work/extra-push.stderr" && r=PASS || r="FAIL (not pushed)"
row push argv pushed-line shown "$r"
verdicts push argv "$work/extra-push" "$work/extra-push" push
runone "$work/extra-pushdown" loadgen --url "ws://$addr/ws" --clients 5 --duration 1s \
	--pushgateway "http://pu:${base}push@127.0.0.1:1/?token=${base}push" --out "$work/extra-pushdown"
verdicts pushdown argv "$work/extra-pushdown" "$work/extra-pushdown" push

# --restart-cmd: a bare token in the command, echoed by it as curl -v
# does; its JUnit file and report.html in the folder too. Then a command
# that cannot be split into words (an unbalanced quote): recorded whole
# as <redacted>.
runone "$work/extra-restart" drill --url "ws://$addr/ws" --clients 10 --duration 3s --at 1s \
	--restart-cmd "echo \"> X-Deploy-Token: ${base}restart\"; echo deploying with key ${base}restart; sleep 0.2" \
	--out "$work/extra-restart" --junit "$work/extra-restart/junit.xml" -q
"$exe" report "$work/extra-restart" >/dev/null 2>&1
grep -q "X-Deploy-Token: <redacted>" "$work/extra-restart/deploy.log" && r=PASS || r="FAIL (no deploy.log line)"
row restart argv deploy.log scrubbed "$r"
verdicts restart argv "$work/extra-restart" "$work/extra-restart" restart
runone "$work/extra-restart2" drill --url "ws://$addr/ws" --clients 10 --duration 3s --at 1s \
	--restart-cmd "echo \"token ${base}restart" --out "$work/extra-restart2" -q
grep -q '"restart-cmd": *"<redacted>"' "$work/extra-restart2/summary.json" && r=PASS || r="FAIL (not recorded <redacted>)"
row restart2 argv summary recorded "$r"
verdicts restart2 argv "$work/extra-restart2" "$work/extra-restart2" restart

# Error paths: each refused in one line, none echoing its secret, and the
# libpq string making no folder (run in a folder of its own).
mkdir -p "$work/cwd"
printf 'url: ws://%s/ws\nclients: 1\nduration: 1s\nheader: ["Authorization: Bearer %s\\r\\nX: y"]\n' "$addr" "${base}crlf" >"$work/crlf.yaml"
chmod 600 "$work/crlf.yaml"
errcase() { # NAME PLACE ARGS...: a command that must fail
	local name=$1 place=$2
	shift 2
	cd "$work/cwd" || return
	runone "$work/extra-$name" "$@"
	cd - >/dev/null || return
	[ "$status" != 0 ] && [ "$(wc -l <"$work/extra-$name.stderr")" = 1 ] && r=PASS || r="FAIL (exit $status)"
	row "$name" argv refused one-line "$r"
	verdicts "$name" argv - "$work/extra-$name" "$place"
}
errcase crlf crlf loadgen --url "ws://$addr/ws" --clients 1 --duration 1s -H "$(printf 'Authorization: Bearer %s\r\nX: y' "${base}crlf")"
errcase crlfconf crlf loadgen --config "$work/crlf.yaml"
errcase badstore store run --clients 5 --duration 1s --store "redis://user:${base}store/x@127.0.0.1:1/0" --out "$work/cwd/o1"
errcase libpq store run --clients 5 --duration 1s --store "host=127.0.0.1 password=${base}store dbname=x" --out "$work/cwd/o2"
errcase data data http --data "{\"api_keys\":[\"${base}data\"],\"password\":{\"value\":\"${base}data\"}}" --retries 0 \
	"http://127.0.0.1:1/"
left=$(find "$work/cwd" -mindepth 1 | wc -l)
[ "$left" = 0 ] && r=PASS || r="FAIL ($left made)"
row errors argv no-folder made "$r"

echo "$fails FAIL; $windows secret(s) seen in a command line only in the process's first ${startms} ms (exec)"
[ "$fails" = 0 ]
