// Package render writes an audit.Report as Parquet tables and as one
// self-contained HTML page.
//
// # Parquet
//
// WriteParquet and ParquetWriter write the report's three tables,
// circuits.parquet, seconds.parquet and requests.parquet, with the same
// column names as the JSON and CSV outputs (the parquet tags in
// internal/audit/report.go). The fixed per-category and per-channel arrays
// become one plain float64 column each, named after lludp.Category and
// opensim.Channel: category_resend_bit_per_s … category_asset_bit_per_s,
// channel_avatar_bit_per_s … channel_asset_bit_per_s. A value the audit
// could not measure (a nil pointer) is a Parquet null, never 0. Each
// report given to ParquetWriter.WriteFile is one row group per table, so
// the multi-file audit writes one row group per capture file; a grid
// operator's query over many audits reads them with a glob:
//
//	SELECT circuit, direction, file, verdict, received_over_fair
//	FROM 'audits/*/circuits.parquet'
//	WHERE received_over_fair IS NOT NULL
//	ORDER BY received_over_fair DESC;
//
// The library is github.com/parquet-go/parquet-go: pure Go (so CGO_ENABLED=0
// builds and Windows and macOS cross-compile), maintained, and it writes
// Zstd-compressed files that DuckDB, Spark and Trino read.
//
// # HTML
//
// WriteHTML writes one page with every figure as an inline SVG drawn by
// gonum.org/v1/plot: no network, no JavaScript, no external file. The
// figures follow the St Andrews thesis (figures 7.13 and 7.14; see
// congestion.md §2.2): received against TCP-fair rate per second and per
// connection, received rate against loss event rate with the TFRC
// equation's line (RFC 5348 §3.1) and box plots per loss level, and, for
// the busiest circuits, rate, requests, channels, RTT and loss event rate
// over time. A fair rate that is unknown or unbounded is written as such
// and never plotted as a number.
package render
