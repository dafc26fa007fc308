// Package status is what a person sees of a running front-end (fairgrid
// run, proxy and gateway): a live page at "/" of its metrics address, the
// same state as JSON at /status.json (which `fairgrid status` prints),
// and /healthz. Prometheus keeps /metrics.
//
// # Model
//
// A front-end fills a Snapshot — one row per circuit (per viewer, for the
// gateway): the region it talks to, what the viewer asked, what fairgrid
// asks and why, what is received, loss, RTT and queueing delay; for the
// gateway each route and the refusals by cause — through an adapter:
// FromLoop reads a throttle.Loop, FromGateway an opensim gateway. A Page
// samples the snapshot every Config.Every into a bounded ring per circuit
// (Config.Window of samples, 28 bytes each: 3.4 KB a circuit at the
// defaults, a sample every 5 s for 10 minutes; Config.MaxCircuits of them
// at most, 215 KB) and serves:
//
//   - "/": the page, plain words first ("asking the region for 412 kbit/s:
//     one TCP share at 1.2 % loss and 180 ms; your viewer asked 1,500"),
//     the numbers, and a chart of the last ten minutes per circuit drawn
//     on the server as SVG (gonum.org/v1/plot, already the audit's), so
//     the page works with JavaScript off; a few lines of script fetch the
//     live part again every two seconds. Everything is in the binary
//     (go:embed): the page fetches nothing from elsewhere.
//   - "/status.json": the Snapshot.
//   - "/healthz": 200 or 503 with the health lines (Config.Health).
//   - "/metrics": Config.Metrics.
//
// A chart is drawn when a browser asks for it and its circuit has a new
// sample, at most once per sample and circuit, so a page left open costs
// a few milliseconds every Every (BenchmarkStatusPage), and nothing when
// nobody looks.
//
// The /healthz lines come from CaptureHealth (run), ListenHealth (proxy)
// and GatewayHealth. Fetch, First and Wait are the other side: what
// `fairgrid status` reads from a running front-end.
//
// # Lifecycle
//
// New validates and starts nothing; Run samples until its context ends;
// Page is an http.Handler.
package status
