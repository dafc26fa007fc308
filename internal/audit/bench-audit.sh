#!/usr/bin/env bash
# make bench-audit: fairgrid audit --format json against tcpdump reading the
# same capture: the real OpenSim capture repeated as one long session
# (gencapture -real: sequence numbers, acks and pings continue from copy to
# copy), N datagrams (default 2 M). fairgrid runs with GOMAXPROCS=1 (one
# core, its GC included; tcpdump has one thread); the two alternate RUNS
# times and the best of each counts, in wall time and in CPU time
# (user+sys, which other load on the machine disturbs less); ratios are
# taken in the same run. Then the peak RSS of the audit on that capture and
# on one ten times longer (memory must not grow with the capture), and what
# --html adds.
set -euo pipefail
bin=$1
n=${2:-2000000}
runs=${RUNS:-5}
real=${REAL:-../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[ -r "$real" ] || { echo "real capture $real not found (set REAL=path)"; exit 1; }

clock() { # "wall cpu" seconds of one run of "$@", output discarded
	local TIMEFORMAT='%R %U %S'
	{ time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}
best() { tr ' ' '\n' | sort -g | head -1; }
rss() { # peak RSS in KiB of one run of "$@"
	/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
}

go run ./capture/capturetest/gencapture -real "$real" -n "$n" -o "$dir/x1.pcap" >/dev/null
count=$("$bin" audit --format json "$dir/x1.pcap" | grep -o '"datagrams":[0-9]*' | head -1 | cut -d: -f2)
aw=() ac=() tw=() tc=() hw=() hc=()
for _ in $(seq "$runs"); do
	read -r a b < <(clock env GOMAXPROCS=1 "$bin" audit --format json "$dir/x1.pcap"); aw+=("$a"); ac+=("$b")
	read -r a b < <(clock tcpdump -r "$dir/x1.pcap" -w /dev/null); tw+=("$a"); tc+=("$b")
	read -r a b < <(clock env GOMAXPROCS=1 "$bin" audit --format json --html "$dir/audit.html" "$dir/x1.pcap"); hw+=("$a"); hc+=("$b")
done
AW=$(echo "${aw[*]}" | best) AC=$(echo "${ac[*]}" | best) TW=$(echo "${tw[*]}" | best) TC=$(echo "${tc[*]}" | best)
HW=$(echo "${hw[*]}" | best) HC=$(echo "${hc[*]}" | best)
awk -v n="$count" -v size="$(du -h "$dir/x1.pcap" | cut -f1)" -v aw="$AW" -v ac="$AC" -v tw="$TW" -v tc="$TC" -v hw="$HW" -v hc="$HC" \
	-v all_a="${aw[*]}" -v all_t="${tw[*]}" 'BEGIN {
	printf "real OpenSim capture repeated as one session: %d datagrams (%s)\n", n, size
	printf "                                     best wall (M datagrams/s)  best CPU (M datagrams/s)\n"
	printf "  fairgrid audit --format json       %6.3f s (%5.2f)             %6.3f s (%5.2f)\n", aw, n/aw/1e6, ac, n/ac/1e6
	printf "  tcpdump -r FILE -w /dev/null       %6.3f s (%5.2f)             %6.3f s (%5.2f)\n", tw, n/tw/1e6, tc, n/tc/1e6
	printf "  audit / tcpdump: %.2fx wall, %.2fx CPU\n", aw/tw, ac/tc
	printf "  --html adds %.2f s wall, %.2f s CPU\n", hw-aw, hc-ac
	printf "  all runs, wall: audit %s; tcpdump %s\n", all_a, all_t
}'
r1=$(rss env GOMAXPROCS=1 "$bin" audit --format json "$dir/x1.pcap")
go run ./capture/capturetest/gencapture -real "$real" -n "$((n * 10))" -o "$dir/x10.pcap" >/dev/null
rm -f "$dir/x1.pcap"
r10=$(rss env GOMAXPROCS=1 "$bin" audit --format json "$dir/x10.pcap")
awk -v r1="$r1" -v r10="$r10" -v n="$n" 'BEGIN {
	printf "peak RSS: %d datagrams %.1f MiB, %d datagrams %.1f MiB (%+.1f %%)\n", n, r1/1024, n*10, r10/1024, 100*(r10/r1-1)
}'
