#!/usr/bin/env bash
# make bench-daemon: the daemon's CPU and memory at 5 Mbit/s of viewer
# traffic. A region and viewers stream over loopback; fairgrid run
# captures lo (AF_PACKET, needs root or CAP_NET_RAW) in --dry-run mode, so
# it measures and decides as in production; /proc gives its CPU time and RSS.
set -euo pipefail
bin=$1
secs=${2:-30}
dir=$(mktemp -d)
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"; }
pids=()
trap cleanup EXIT
"$bin" sim --listen 127.0.0.1:9600 --activity flying --client-max 8M >/dev/null 2>&1 & pids+=($!)
"$bin" run --interface lo --dry-run --metrics "" --log-level warn --config <(printf '[capture]\nports = ["9600"]\n') >/dev/null 2>"$dir/daemon.err" & daemon=$!; pids+=($daemon)
sleep 1
"$bin" viewer --sim 127.0.0.1:9600 --clients 2 --throttle 2500k --duration "${secs}s" --format json > "$dir/viewers.json" &
pids+=($!)
sleep 3 # let the viewers log in and the stream settle
hz=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{print $14, $15}' /proc/$daemon/stat)
t0=$(date +%s.%N)
sleep $((secs - 6))
read -r u1 s1 < <(awk '{print $14, $15}' /proc/$daemon/stat)
t1=$(date +%s.%N)
rss=$(awk '/VmRSS/ {print $2}' /proc/$daemon/status)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$daemon/status)
wait "${pids[2]}" 2>/dev/null || true
rate=$(awk -F'"rate_bps":' '{split($2, a, ","); s += a[1]} END {printf "%.2f", s/1e6}' "$dir/viewers.json")
awk -v u0=$u0 -v s0=$s0 -v u1=$u1 -v s1=$s1 -v hz=$hz -v t0=$t0 -v t1=$t1 -v rss=$rss -v hwm=$hwm -v rate="$rate" 'BEGIN {
	cpu = ((u1 + s1) - (u0 + s0)) / hz / (t1 - t0) * 100
	printf "viewer traffic: %s Mbit/s received in all\n", rate
	printf "daemon CPU: %.2f %% of one core (user %.2f %%, kernel %.2f %%)\n", cpu, (u1 - u0) / hz / (t1 - t0) * 100, (s1 - s0) / hz / (t1 - t0) * 100
	printf "daemon RSS: %.1f MB (peak %.1f MB)\n", rss / 1024, hwm / 1024
}'
