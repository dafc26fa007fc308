#!/usr/bin/env bash
# make bench-capture: fairgrid decode --summary against tcpdump reading the
# same capture, on two captures: the real OpenSim capture repeated as one
# long session (gencapture -real: its sequence numbers, acks and pings
# continue from copy to copy), and the synthetic one. fairgrid runs with
# GOMAXPROCS=1 (one core, its GC included; tcpdump has one thread), the two
# alternate RUNS times, and the best of each counts, in wall time and in CPU
# time (user+sys, which other load on the machine disturbs less); the
# ratios are taken in the same run. On the real capture, decode --format json
# streaming every datagram is timed too.
set -euo pipefail
bin=$1
n=${2:-2000000}
runs=${RUNS:-5}
real=${REAL:-../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

clock() { # "wall cpu" seconds of one run of "$@", output discarded
	local TIMEFORMAT='%R %U %S'
	{ time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}

bench() { # bench LABEL FILE
	local label=$1 file=$2 fw=() fc=() tw=() tc=() a b
	# The datagrams decode measured, from its own count.
	local count
	count=$("$bin" decode --summary "$file" 2>&1 >/dev/null | sed -n 's/.* frames, \([0-9]*\) UDP datagrams.*/\1/p')
	for _ in $(seq "$runs"); do
		read -r a b < <(clock env GOMAXPROCS=1 "$bin" decode --summary "$file"); fw+=("$a"); fc+=("$b")
		read -r a b < <(clock tcpdump -r "$file" -w /dev/null); tw+=("$a"); tc+=("$b")
	done
	awk -v label="$label" -v n="$count" -v size="$(du -h "$file" | cut -f1)" \
		-v fw="${fw[*]}" -v fc="${fc[*]}" -v tw="${tw[*]}" -v tc="${tc[*]}" '
	function best(s,   a, i, b) { split(s, a, " "); b = a[1]; for (i in a) if (a[i] + 0 < b + 0) b = a[i]; return b }
	BEGIN {
		printf "%s: %d datagrams (%s)\n", label, n, size
		printf "                               best wall (M datagrams/s)  best CPU (M datagrams/s)\n"
		printf "  fairgrid decode --summary    %6.3f s (%5.2f)             %6.3f s (%5.2f)\n", best(fw), n/best(fw)/1e6, best(fc), n/best(fc)/1e6
		printf "  tcpdump -r FILE -w /dev/null %6.3f s (%5.2f)             %6.3f s (%5.2f)\n", best(tw), n/best(tw)/1e6, best(tc), n/best(tc)/1e6
		printf "  fairgrid / tcpdump: %.2fx wall, %.2fx CPU\n", best(fw)/best(tw), best(fc)/best(tc)
		printf "  all runs, wall: fairgrid %s; tcpdump %s\n", fw, tw
	}'
}

bench_json() { # bench_json FILE: decode streaming every datagram as JSON
	local file=$1 jw=() jc=() a b count
	count=$("$bin" decode --summary "$file" 2>&1 >/dev/null | sed -n 's/.* frames, \([0-9]*\) UDP datagrams.*/\1/p')
	for _ in $(seq "$runs"); do
		read -r a b < <(clock env GOMAXPROCS=1 "$bin" decode --format json "$file"); jw+=("$a"); jc+=("$b")
	done
	awk -v n="$count" -v jw="${jw[*]}" -v jc="${jc[*]}" '
	function best(s,   a, i, b) { split(s, a, " "); b = a[1]; for (i in a) if (a[i] + 0 < b + 0) b = a[i]; return b }
	BEGIN {
		printf "  fairgrid decode --format json %6.3f s (%5.2f)             %6.3f s (%5.2f)\n", best(jw), n/best(jw)/1e6, best(jc), n/best(jc)/1e6
		printf "  all runs, wall: %s\n", jw
	}'
}

if [ -r "$real" ]; then
	go run ./capture/capturetest/gencapture -real "$real" -n "$n" -o "$dir/real.pcap"
	bench "real OpenSim capture repeated as one session" "$dir/real.pcap"
	bench_json "$dir/real.pcap"
	rm -f "$dir/real.pcap"
else
	echo "real capture $real not found: the real benchmark is skipped (set REAL=path)"
fi
go run ./capture/capturetest/gencapture -n "$n" -o "$dir/synthetic.pcap"
bench "synthetic capture (10 circuits, 1 % loss)" "$dir/synthetic.pcap"
