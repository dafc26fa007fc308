#!/usr/bin/env bash
# Acceptance against a real OpenSim 0.9.2.2 (issue 33, item 7):
# `make acceptance-opensim`, never part of `make test`.
#
# It runs a pre-built OpenSim 0.9.2.2 and two libopenmetaverse TestClients;
# it builds neither (docs/opensim.md says how to point it at a build):
#   OPENSIM_DIR  OpenSim's bin/ (holding OpenSim.exe)
#   TESTCLIENT   libopenmetaverse's TestClient.exe
# Without them, or without root, mono, tmux, tcpdump or ip(8), it says why
# and exits 0.
#
# Everything runs inside a network namespace of its own that holds only lo
# (OpenSim's HTTP server binds 0.0.0.0): OpenSim's UDP at 127.0.0.1:9000,
# its ExternalHostName 127.0.0.2, where `fairgrid link` (40 ms each way, 3 %
# loss) relays each client's UDP, so every client's datagrams cross the
# emulated link. The region is kept busy by a terrain edit every 2 s on its
# console (`terrain elevate 1` / `terrain lower 1` in turn: every patch
# changes, so OpenSim sends every patch again as LayerData). Then the arms,
# each with two fresh clients:
#   a  no fairgrid
#   b  fairgrid run beside the clients (captures lo, injects AgentThrottle)
#   c  the clients through fairgrid proxy (SOCKS 5): skipped, TestClient
#      has no SOCKS support
#   d  fairgrid gateway in front of OpenSim (link -> gateway 127.0.0.3:9000
#      -> OpenSim 127.0.0.1:9000)
#   e  no fairgrid again, last: how far the region drifts over the run
# Each client's LLUDP downstream is measured at the link's viewer side from
# a capture of the measurement window, with `fairgrid audit` for its loss
# and RTT. The markdown report goes to stdout, and to ACCEPTANCE_OUT when set
# (e.g. docs/results/acceptance-opensim.md).
#
# Knobs (environment): FAIRGRID (a fairgrid binary; default: build
# bin/fairgrid from this checkout), ARMS
# ("a b c d"), ARM_SECONDS (75: the measurement window), WARMUP_SECONDS (20:
# after both clients are in), TERRAIN_EVERY (2), LINK_DELAY (40ms),
# LINK_LOSS (3%), LINK_SEED (1), KEEP_WORK (1: keep the work directory).
set -u

skip() { echo "acceptance-opensim: SKIP: $*"; exit 0; }

[ -n "${OPENSIM_DIR:-}" ] || skip "OPENSIM_DIR is not set (OpenSim 0.9.2.2's bin/, built: see docs/opensim.md)"
[ -f "$OPENSIM_DIR/OpenSim.exe" ] || skip "no OpenSim.exe in OPENSIM_DIR=$OPENSIM_DIR (not built?)"
[ -f "$OPENSIM_DIR/OpenSim.ini.example" ] || skip "no OpenSim.ini.example in OPENSIM_DIR=$OPENSIM_DIR (not an OpenSim bin/)"
[ -n "${TESTCLIENT:-}" ] || skip "TESTCLIENT is not set (libopenmetaverse's TestClient.exe, built: see docs/opensim.md)"
[ -f "$TESTCLIENT" ] || skip "TESTCLIENT=$TESTCLIENT does not exist (not built?)"
[ "$(id -u)" = 0 ] || skip "needs root (a network namespace, a capture, raw sockets)"
for t in mono tmux tcpdump ip jq curl awk; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"
done

if [ -z "${FAIRGRID:-}" ]; then
	FAIRGRID=bin/fairgrid
	echo "acceptance-opensim: building $FAIRGRID" >&2
	CGO_ENABLED=0 ${GO:-go} build -o "$FAIRGRID" ./cmd/fairgrid || exit 1
fi
[ -x "$FAIRGRID" ] || { echo "acceptance-opensim: no fairgrid binary at $FAIRGRID" >&2; exit 1; }
FAIRGRID=$(cd "$(dirname "$FAIRGRID")" && pwd)/$(basename "$FAIRGRID")
ARMS=${ARMS:-a b c d e}
ARM_SECONDS=${ARM_SECONDS:-90}
WARMUP_SECONDS=${WARMUP_SECONDS:-20}
TERRAIN_EVERY=${TERRAIN_EVERY:-2}
LINK_DELAY=${LINK_DELAY:-40ms}
LINK_LOSS=${LINK_LOSS:-3%}
LINK_SEED=${LINK_SEED:-1}

REGION=127.0.0.1:9000 # OpenSim's UDP (InternalAddress:InternalPort)
PUBLIC=127.0.0.2      # ExternalHostName: the link's listen address
GATEWAY=127.0.0.3:9000
LOGIN_URI=http://127.0.0.1:9000/

W=$(mktemp -d /tmp/fg-acceptance-opensim.XXXXXX)
NS=fgacc$$
TM="tmux -L $NS"
PIDS=()
log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
in_ns() { ip netns exec "$NS" "$@"; }

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	if $TM has-session -t os 2>/dev/null; then
		$TM send-keys -t os:0 "shutdown" Enter 2>/dev/null
		for _ in $(seq 1 20); do $TM has-session -t os 2>/dev/null || break; sleep 1; done
	fi
	$TM kill-server 2>/dev/null
	ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null
	sleep 1
	ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	if [ "${KEEP_WORK:-1}" = 1 ]; then log "work directory (logs, captures): $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the region: a copy of OPENSIM_DIR with a standalone configuration ----
log "copying $OPENSIM_DIR to $W/opensim"
cp -a "$OPENSIM_DIR" "$W/opensim" || exit 1
OS=$W/opensim
cp "$OS/OpenSim.ini.example" "$OS/OpenSim.ini"
cp "$OS/config-include/StandaloneCommon.ini.example" "$OS/config-include/StandaloneCommon.ini"
rm -rf "$OS/config" "$OS/Regions" && mkdir -p "$OS/config" "$OS/Regions"
# Read after OpenSim.ini (OpenSim's inidirectory, "config"), so these win.
cat >"$OS/config/acceptance.ini" <<EOF
[Startup]
    startup_console_commands_file = "acceptance_startup.txt"
[Estates]
    DefaultEstateName = Acceptance Estate
    DefaultEstateOwnerName = Estate Owner
    DefaultEstateOwnerUUID = 00000000-0000-0000-0000-0000000000e0
    DefaultEstateOwnerEMail = owner@example.invalid
    DefaultEstateOwnerPassword = owner
[GridService]
    Region_Acceptance = "DefaultRegion, FallbackRegion"
[Architecture]
    Include-Architecture = "config-include/Standalone.ini"
EOF
cat >"$OS/Regions/Regions.ini" <<EOF
[Acceptance]
RegionUUID = 5a1e0000-0000-4000-8000-000000000001
Location = 1000,1000
SizeX = 256
SizeY = 256
InternalAddress = ${REGION%:*}
InternalPort = ${REGION#*:}
AllowAlternatePorts = False
ExternalHostName = $PUBLIC
EOF
# Two users per arm, so that no arm waits for the last one's logout.
uuid_of() { printf '00000000-0000-0000-0000-0000000a%02x%02x' "$(printf '%d' "'$1")" "$2"; }
: >"$OS/acceptance_startup.txt"
for arm in a b c d e; do
	for n in 1 2; do
		echo "create user Arm $arm$n secret $arm$n@example.invalid $(uuid_of "$arm" "$n") \"\"" >>"$OS/acceptance_startup.txt"
	done
done

ip netns add "$NS" || exit 1
in_ns ip link set lo up
log "network namespace $NS: $(in_ns ip -brief link | awk '{print $1}' | paste -sd' ')"

console() { $TM send-keys -t os:0 "$*" Enter; }
# The console's text since the last clear, joined lines.
console_text() { $TM capture-pane -p -J -t os:0 -S -3000; }

log "starting OpenSim in $NS"
$TM new-session -d -s os -x 250 -y 50 "ip netns exec $NS bash -c 'cd $OS && exec mono OpenSim.exe'"
for i in $(seq 1 180); do
	console_text | grep -q "LOGINS ENABLED" && break
	$TM has-session -t os 2>/dev/null || { echo "OpenSim exited during start-up; see $OS/OpenSim.log" >&2; exit 1; }
	sleep 1
done
console_text | grep -q "LOGINS ENABLED" || { echo "OpenSim did not enable logins in 180 s; see $OS/OpenSim.log" >&2; exit 1; }
log "OpenSim: LOGINS ENABLED after ${i} s"
sleep 3 # the startup commands (create user) run after LOGINS ENABLED
for _ in $(seq 1 30); do
	[ "$(grep -c "Account .* created successfully\|created successfully" "$OS/OpenSim.log" 2>/dev/null)" -ge 8 ] && break
	sleep 1
done
VERSION=$(grep -m1 -o "OpenSimulator version: [^ ]* *[^ ]*" "$OS/OpenSim.log" 2>/dev/null || true)

# show throttles: clear the pane, ask, wait, keep what follows the command.
show_throttles() {
	$TM clear-history -t os:0
	$TM send-keys -t os:0 C-l
	console "show throttles"
	sleep 1.5
	# Only the table after the last "show throttles" typed.
	console_text | awk '/# show throttles/{n=0; next} {buf[++n]=$0} END{for(i=1;i<=n;i++) print buf[i]}' |
		grep -v "^\s*$" | grep -v "^Region (.*) #" | grep -v "^[0-9:]* - \["
}

# Per-arm: start the clients in tmux windows, wait for their login.
start_client() { # arm n
	local name="Arm $1$2" win="c$1$2"
	$TM new-window -d -t os -n "$win" "ip netns exec $NS bash -c 'cd $(dirname "$TESTCLIENT") && exec mono $(basename "$TESTCLIENT") --first Arm --last $1$2 --pass secret --loginuri=$LOGIN_URI --startpos Acceptance/128/128/25 2>&1 | tee $W/arm-$1/client$2.log'"
	echo "$name"
}
client_in() { grep -q "Logged in" "$W/arm-$1/client$2.log" 2>/dev/null; }
stop_client() { # arm n
	$TM send-keys -t "os:c$1$2" "quit" Enter 2>/dev/null
}

now() { echo "$EPOCHREALTIME"; }
scrape_metrics() { # arm
	case $1 in
	b) in_ns curl -s --max-time 5 http://127.0.0.1:9101/metrics ;;
	d) in_ns curl -s --max-time 5 http://127.0.0.1:9103/metrics ;;
	esac
}
sleep_until() { local d; d=$(awk -v t="$1" -v n="$EPOCHREALTIME" 'BEGIN{d=t-n; if(d>0) printf "%.3f", d; else print 0}'); sleep "$d"; }

RESULTS=$W/results.tsv # arm client agent port bytes_per_s loss_event_rate rtt_ms request throttles median_1s_kbps resent/lost
: >"$RESULTS"
NOTES=$W/notes.md
: >"$NOTES"

run_arm() { # arm
	local arm=$1 up=$REGION d=$W/arm-$1 pid_link pid_fg="" pid_dump pid_win
	mkdir -p "$d"
	case $arm in
	c)
		echo "- **(c) fairgrid proxy: not run.** libopenmetaverse's TestClient (and its library) has no SOCKS 5 support: it opens its own UDP socket to the region and no setting sends it through a proxy (\`grep -ri socks\` in libopenmetaverse finds only the clothing item). A SOCKS wrapper such as proxychains carries TCP only, not UDP ASSOCIATE." >>"$NOTES"
		log "arm c: skipped (TestClient has no SOCKS 5 support)"
		return
		;;
	d)
		up=$GATEWAY
		# Agent IDs in the metrics, to tell the clients apart (a key of
		# newer builds; without it the circuits are told by their order).
		local gwargs=(--listen "$GATEWAY" --region "$REGION")
		printf '[gateway]\nroutes = ["%s=%s"]\nmetrics_identify_viewers = true\n' "$GATEWAY" "$REGION" >"$d/gateway.toml"
		"$FAIRGRID" gateway --check-config "$d/gateway.toml" >/dev/null 2>&1 && gwargs=(--config "$d/gateway.toml")
		ip netns exec "$NS" "$FAIRGRID" gateway "${gwargs[@]}" --metrics 127.0.0.1:9103 >"$d/gateway.log" 2>&1 &
		pid_fg=$!
		;;
	b)
		cat >"$d/fairgrid.toml" <<EOF
[capture]
interface = "lo"
ports = ["9000"]
sims = ["$PUBLIC:9000"]
[metrics]
address = "127.0.0.1:9101"
EOF
		ip netns exec "$NS" "$FAIRGRID" run --config "$d/fairgrid.toml" >"$d/run.log" 2>&1 &
		pid_fg=$!
		;;
	esac
	[ -n "$pid_fg" ] && PIDS+=("$pid_fg")
	ip netns exec "$NS" "$FAIRGRID" link --listen "$PUBLIC:9000" --upstream "$up" --delay "$LINK_DELAY" --loss "$LINK_LOSS" \
		--seed "$LINK_SEED" --format json >"$d/link.json" 2>"$d/link.log" &
	pid_link=$!
	PIDS+=("$pid_link")
	ip netns exec "$NS" tcpdump -i lo -n -U -s 0 -w "$d/arm.pcap" "udp and host $PUBLIC and port 9000" 2>"$d/tcpdump.log" &
	pid_dump=$!
	PIDS+=("$pid_dump")
	sleep 1
	if [ -n "$pid_fg" ] && ! kill -0 "$pid_fg" 2>/dev/null; then
		log "arm $arm: fairgrid exited at start:"; cat "$d"/run.log "$d"/gateway.log 2>/dev/null >&2
	fi

	log "arm $arm: logging in Arm ${arm}1 and Arm ${arm}2"
	start_client "$arm" 1 >/dev/null
	sleep 2
	start_client "$arm" 2 >/dev/null
	local ok=0
	for _ in $(seq 1 90); do
		client_in "$arm" 1 && client_in "$arm" 2 && { ok=1; break; }
		sleep 1
	done
	if [ $ok = 0 ]; then
		log "arm $arm: a client did not log in within 90 s"
		echo "- **($arm): a client did not log in within 90 s** (logs in $d)." >>"$NOTES"
	fi
	sleep "$WARMUP_SECONDS"

	# The measurement window: a terrain edit every TERRAIN_EVERY seconds,
	# show throttles at its start and its end, a capture of its own.
	show_throttles >"$d/throttles-start.txt"
	scrape_metrics "$arm" >"$d/metrics-start.txt"
	ip netns exec "$NS" tcpdump -i lo -n -U -s 0 -w "$d/window.pcap" "udp and host $PUBLIC and port 9000" 2>>"$d/tcpdump.log" &
	pid_win=$!
	PIDS+=("$pid_win")
	sleep 0.5
	local t0 t1 tick k=0
	t0=$(now)
	tick=$t0
	while awk -v n="$EPOCHREALTIME" -v e="$t0" -v s="$ARM_SECONDS" 'BEGIN{exit !(n < e+s)}'; do
		if [ $((k % 2)) = 0 ]; then console "terrain elevate 1"; else console "terrain lower 1"; fi
		k=$((k + 1))
		tick=$(awk -v t="$tick" -v s="$TERRAIN_EVERY" 'BEGIN{printf "%.6f", t+s}')
		sleep_until "$tick"
	done
	t1=$(now)
	kill -INT "$pid_win"; wait "$pid_win" 2>/dev/null
	show_throttles >"$d/throttles-end.txt"
	if [ $((k % 2)) = 1 ]; then console "terrain lower 1"; fi # leave the terrain as it was
	local secs
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
	echo "$secs" >"$d/window-seconds"
	log "arm $arm: window ${secs} s, $k terrain edits"

	scrape_metrics "$arm" >"$d/metrics.txt" # fairgrid's own view at the end of the window

	stop_client "$arm" 1
	stop_client "$arm" 2
	for _ in $(seq 1 15); do
		$TM list-windows -t os -F '#W' | grep -q "^c$arm" || break
		sleep 1
	done
	$TM kill-window -t "os:c${arm}1" 2>/dev/null
	$TM kill-window -t "os:c${arm}2" 2>/dev/null
	kill -INT "$pid_link" "$pid_dump" 2>/dev/null
	wait "$pid_link" "$pid_dump" 2>/dev/null
	if [ -n "$pid_fg" ]; then kill -TERM "$pid_fg" 2>/dev/null; wait "$pid_fg" 2>/dev/null; fi
	sleep 3

	summarize_arm "$arm" "$secs"
}

# One row per client: bytes/s downstream at the viewer's side of the link
# over the window, loss and RTT from fairgrid audit on the window's capture,
# what fairgrid asked for, OpenSim's total from show throttles.
summarize_arm() { # arm secs
	local arm=$1 secs=$2 d=$W/arm-$1
	"$FAIRGRID" audit --format json --sim "$PUBLIC:9000" --ports 9000 "$d/window.pcap" >"$d/audit.json" 2>"$d/audit.log"
	for n in 1 2; do
		local agent port bps ler rtt med rsn req thr
		agent=$(uuid_of "$arm" "$n")
		port=$(jq -r --arg a "$agent" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0].viewer // "" | split(":") | last // ""' "$d/audit.json" 2>/dev/null)
		bps=$(jq -r --arg a "$agent" --argjson s "$secs" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0].bytes // empty | . / $s | floor' "$d/audit.json" 2>/dev/null)
		ler=$(jq -r --arg a "$agent" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0].loss_event_rate // empty | . * 1000 | round / 1000' "$d/audit.json" 2>/dev/null)
		rtt=$(jq -r --arg a "$agent" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0].rtt_ms // empty | round' "$d/audit.json" 2>/dev/null)
		med=$(jq -r --arg a "$agent" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0].median_1s_bit_per_s // empty | . / 1000 | floor' "$d/audit.json" 2>/dev/null)
		rsn=$(jq -r --arg a "$agent" '[.circuits[] | select(.agent_id == $a and .direction == "down")][0] | "\(.resent) / \(.lost)"' "$d/audit.json" 2>/dev/null)
		req="—"
		case $arm in
		b) # the daemon's last decision for this client's circuit (bits/s)
			req=$(grep "throttle decision" "$d/run.log" | grep -F "circuit=127.0.0.1:$port-" | grep -o 'rate_bps=[0-9]*' | cut -d= -f2 |
				awk '{v=int($1/1000); if (NR==1) {f=v; lo=v; hi=v} if (v<lo) lo=v; if (v>hi) hi=v; l=v} END{if (NR) printf "%d → %d kbit/s (%d–%d; %d sent)", f, l, lo, hi, NR}')
			[ -n "$req" ] || req="none logged"
			;;
		d) # the rate in force at the gateway: the lesser of asked and fair
			local v r0 r f
			v=$(grep '^fairgrid_gateway_circuit_info' "$d/metrics.txt" | grep -F "agent=\"$agent\"" | grep -o 'viewer="[^"]*"' | head -1)
			# Unidentified circuits are c1, c2 in the order they opened.
			[ -n "$v" ] || v=$(grep '^fairgrid_gateway_circuit_info' "$d/metrics.txt" | grep -F "viewer=\"c$n\"" | grep -o 'viewer="[^"]*"' | head -1)
			r0=$(grep '^fairgrid_gateway_circuit_rate_bytes_per_second' "$d/metrics-start.txt" | grep -F "$v" | awk '{printf "%d", $NF*8/1000}')
			r=$(grep '^fairgrid_gateway_circuit_rate_bytes_per_second' "$d/metrics.txt" | grep -F "$v" | awk '{printf "%d", $NF*8/1000}')
			f=$(grep '^fairgrid_gateway_circuit_fair_rate_bytes_per_second' "$d/metrics.txt" | grep -F "$v" | awk '{printf "%d", $NF*8/1000}')
			[ -n "$v" ] && req="rate in force ${r0:-?} → ${r:-?} kbit/s (fair ${f:-?} at the end)" || req="not in metrics"
			;;
		esac
		# "Arm b1  Acceptance  Rt  -  Target  Actual  Resend  Land ...": the total and Land
		thr=$(grep -i "^arm $arm$n " "$d/throttles-end.txt" | head -1 | awk '{printf "%d (Land %s)", $6, $9}')
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$arm" "$n" "$agent" "${port:--}" "${bps:--}" "${ler:--}" "${rtt:--}" "$req" "${thr:--}" "${med:--}" "${rsn:--}" >>"$RESULTS"
	done
}

START=$(date -u +"%Y-%m-%d %H:%M UTC")
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for arm in $ARMS; do run_arm "$arm"; done

# ---- the report ----
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
report() {
	local label
	echo "## Acceptance against a real OpenSim 0.9.2.2: results"
	echo
	echo "- Command: \`make acceptance-opensim\` (OPENSIM_DIR, TESTCLIENT set; ARMS=\"$ARMS\" ARM_SECONDS=$ARM_SECONDS WARMUP_SECONDS=$WARMUP_SECONDS TERRAIN_EVERY=$TERRAIN_EVERY)"
	echo "- Date: $START"
	echo "- Machine: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(mono --version | head -1 | sed 's/ (.*//'); fairgrid $("$FAIRGRID" version | awk '{print $2, $3, $4}'), checkout $(git rev-parse --short HEAD 2>/dev/null || echo unknown); load average $LOAD0 at the start, $LOAD1 at the end"
	echo "- Region: ${VERSION:-OpenSim (version line not found)}, standalone, one 256 m region; two libopenmetaverse TestClients per arm (fresh users), each client's UDP through \`fairgrid link\` ($LINK_DELAY each way, $LINK_LOSS loss each way, seed $LINK_SEED)"
	echo "- Load: \`terrain elevate 1\` / \`terrain lower 1\` in turn on the region's console every $TERRAIN_EVERY s (every patch changes: OpenSim sends the region's LayerData again), after a ${WARMUP_SECONDS} s warm-up from the second login"
	echo "- Columns: downstream, LLUDP payload bytes from the link to the client over the ${ARM_SECONDS} s window ÷ its length, from a capture at the client's side of the link; median 1 s, resent / lost (datagrams the region resent / lost on the way), loss event rate and RTT (the region's pings) from \`fairgrid audit\` on that capture; fairgrid's request: (b) the daemon's decisions over the arm, first → last (range; count), from its log; (d) the gateway's rate in force at the window's start → end, from its metrics"
	echo
	echo "| arm | client | downstream (B/s) | vs (a) | median 1 s (kbit/s) | resent / lost | loss event rate | RTT (ms) | fairgrid's request / rate over the arm | OpenSim \`show throttles\` at the end, kbit/s: total (Land) |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"
	while IFS=$'\t' read -r arm n agent port bps ler rtt req thr med rsn; do
		case $arm in a) label="(a) no fairgrid" ;; b) label="(b) fairgrid run" ;; d) label="(d) fairgrid gateway" ;; e) label="(e) no fairgrid, again" ;; *) label=$arm ;; esac
		local base ratio
		base=$(awk -F'\t' -v n="$n" '$1=="a" && $2==n {print $5}' "$RESULTS")
		ratio=$(awk -v x="$bps" -v b="$base" 'BEGIN{if (x+0>0 && b+0>0) printf "%.2f×", x/b; else print "—"}')
		echo "| $label | Arm $arm$n (port ${port}) | $bps | $ratio | $med | $rsn | $ler | $rtt | $req | $thr |"
	done <"$RESULTS"
	for arm in $ARMS; do
		[ "$arm" = c ] && continue
		local tot base
		tot=$(awk -F'\t' -v a="$arm" '$1==a && $5+0>0 {s+=$5} END{print s+0}' "$RESULTS")
		base=$(awk -F'\t' '$1=="a" && $5+0>0 {s+=$5} END{print s+0}' "$RESULTS")
		awk -v a="$arm" -v t="$tot" -v b="$base" 'BEGIN{printf "| (%s) both clients | | %d | %s | | | | | | |\n", a, t, (b>0 && t>0) ? sprintf("%.2f×", t/b) : "—"}'
	done
	echo
	[ -s "$NOTES" ] && { cat "$NOTES"; echo; }
	for arm in $ARMS; do
		[ -f "$W/arm-$arm/throttles-end.txt" ] || continue
		echo "OpenSim's \`show throttles\` at the end of arm ($arm) (kbit/s):"
		echo
		echo '```'
		cat "$W/arm-$arm/throttles-end.txt"
		echo '```'
		echo
	done
}
report | tee "$W/report.md"
if [ -n "${ACCEPTANCE_OUT:-}" ]; then
	cp "$W/report.md" "$ACCEPTANCE_OUT" && log "report written to $ACCEPTANCE_OUT"
fi
