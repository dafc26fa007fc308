# One row per side of `fairgrid run --demo --format json`'s summary, read
# slurped (-s), for run $run (.ci/results.sh).
def k: . / 1000 | round;
def f2: . * 100 | round / 100;
(map(select(.summary)) | last) as $s |
[["stock viewer", $s.stock], ["with fairgrid", $s.fairgrid], ["through the gateway", $s.gateway]][] |
select(.[1] != null) | .[0] as $side | .[1] as $x |
"| \($run) | \($side) | \($x.download_bps | k) | \($x.viewer_bps | k) | **\($x.viewer_over_download | f2)** | \($x.queue_delay_mean_ms | round) (\($x.queue_delay_p95_ms | round)) | " +
(if $side == "stock viewer" then "—" else "\($x.download_bps / $s.stock.download_bps | f2)" end) + " | " +
(if $side == "with fairgrid" then "\($s.requests) requests, \($s.reasserts) re-assertions (longest \($s.max_override_ms * 10 | round / 10) ms)" else "" end) + " |"
