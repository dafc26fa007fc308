# One row per arm of `fairgrid lab gateway --format json` (.ci/results.sh).
def k: . / 1000 | round;
def f2: . * 100 | round / 100;
. as $r | .arms[] |
"| \($r.seed) | \(.arm) | \(.download_wire_bps | k) | \(.viewer_bps | k) | **\(.viewer_over_download | f2)** | \(.queue_delay_mean_ms | round) (\(.queue_delay_p95_ms | round)) | " +
(if .gateway then "\(.gateway.fair_bps | k) | \(.gateway.rate_bps | k) | \(.gateway.loss_event_rate * 1000 | round / 1000) | \(.gateway.rtt_ms | round) |" else "— | — | — | — |" end)
