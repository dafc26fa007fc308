# The product's seats over the grid, from `fairgrid lab fairness --out
# DIR`'s rows.json, slurped (jq -rs; .ci/results.sh): per seat, how many
# saturating cells are within 0.8–1.25 of the TCP flow and the mean
# |ln(seat ÷ TCP)|; then each cell's ratios side by side, with what the
# stock viewer costs the TCP flow; then the application-limited rows.
def f2: . * 100 | round / 100;
def inband: .viewer_over_tcp >= 0.8 and .viewer_over_tcp <= 1.25;
def absln: if .viewer_over_tcp > 0 then (.viewer_over_tcp | log | fabs) else 5 end;
def cell: "\(.link_bps / 1e6) Mbit/s, \(.rtt_ms) ms, \(.buffer_packets) pkt, \(.loss * 100) %, \(.tcp_flows) flow" + (if .tcp_flows > 1 then "s" else "" end);
def key: [.tcp, .tcp_flows, .buffer_packets, .loss, .rtt_ms, .link_bps];
def bold($rows; $s; $k): ($rows | map(select(.seat == $s and key == $k)) | first | .viewer_over_tcp) as $x |
	if $x == null then "—" elif $x >= 0.8 and $x <= 1.25 then "**\($x | f2)**" else "\($x | f2)" end;
(map(select((.demand // "") == ""))) as $sat |
($sat | map(.seat) | reduce .[] as $s ([]; if index([$s]) then . else . + [$s] end)) as $seats |
($sat | map(key) | reduce .[] as $k ([]; if index([$k]) then . else . + [$k] end)) as $keys |
"Per seat, saturating demand, over the grid's cells (band 0.8–1.25 of the TCP flow):",
"",
"| seat | region | cells | within 0.8–1.25 | mean \\|ln(seat ÷ TCP)\\| | below 0.8 | above 1.25 |",
"|---|---|---:|---:|---:|---:|---:|",
($seats[] as $s | $sat | map(select(.seat == $s)) |
	"| \($s) | \(.[0].region // "—") | \(length) | \(map(select(inband)) | length) | \(map(absln) | add / length | f2) | \(map(select(.viewer_over_tcp < 0.8)) | length) | \(map(select(.viewer_over_tcp > 1.25)) | length) |"),
"",
"Each cell, seat ÷ TCP (in the band in bold); the last column is what the TCP flow got beside the stock viewer ÷ what it got beside a TCP flow in the seat (the stock viewer's harm: below 1, it took from TCP):",
"",
"| TCP | cell | " + ($seats | join(" | ")) + " | TCP beside stock ÷ beside tcp |",
"|---|---|" + ($seats | map("---:") | join("|")) + "|---:|",
($keys[] as $k |
	($sat | map(select(key == $k and .seat == "stock")) | first | .tcp_bps_per_flow) as $ts |
	($sat | map(select(key == $k and (.seat | startswith("tcp:")))) | first | .tcp_bps_per_flow) as $tt |
	($sat | map(select(key == $k)) | first) as $r |
	"| \($r.tcp) | \($r | cell) | " + ($seats | map(. as $s | bold($sat; $s; $k)) | join(" | ")) + " | " +
	(if $ts and $tt and $tt > 0 then "\($ts / $tt | f2)" else "—" end) + " |"),
"",
"Application-limited rows (the region's workload below one share):",
"",
"| seat | demand | TCP | cell | viewer (kbit/s) | ÷ stock's |",
"|---|---|---|---|---:|---:|",
(map(select((.demand // "") != "")) as $lim | $lim[] | . as $r |
	($lim | map(select(.seat == "stock" and .demand == $r.demand and key == ($r | key))) | first | .viewer_bps) as $st |
	"| \(.seat) | \(.demand) | \(.tcp) | \(cell) | \(.viewer_bps / 1000 | round) | " + (if $st and $st > 0 then "\(.viewer_bps / $st | f2)" else "—" end) + " |")
