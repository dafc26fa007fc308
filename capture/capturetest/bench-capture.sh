#!/usr/bin/env bash
# make bench-capture: fairgrid decode --summary against tcpdump reading the
# same capture, best of five runs each, on this machine in the same run.
set -euo pipefail
bin=$1
n=${2:-2000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./capture/capturetest/gencapture -n "$n" -o "$dir/bench.pcap"
best() { # best wall time in seconds of five runs of "$@"
	local b=
	for _ in 1 2 3 4 5; do
		local s e
		s=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s.%N)
		b=$(echo "$s $e ${b:-999999}" | awk '{t=$2-$1; print (t<$3)?t:$3}')
	done
	echo "$b"
}
size=$(du -h "$dir/bench.pcap" | cut -f1)
f=$(best "$bin" decode --summary "$dir/bench.pcap")
t=$(best tcpdump -r "$dir/bench.pcap" -w /dev/null)
awk -v n="$n" -v f="$f" -v t="$t" -v size="$size" 'BEGIN {
	printf "capture: %d datagrams (%s)\n", n, size
	printf "fairgrid decode --summary   %.3f s  (%.2f M datagrams/s)\n", f, n/f/1e6
	printf "tcpdump -r FILE -w /dev/null %.3f s  (%.2f M datagrams/s)\n", t, n/t/1e6
	printf "fairgrid / tcpdump: %.2fx\n", f/t
}'
