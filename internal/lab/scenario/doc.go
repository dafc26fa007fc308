// Package scenario is the lab's experiments (fairgrid lab SCENARIO): a
// test region and a synthetic viewer beside real TCP flows on one shared,
// emulated bottleneck, each printing its measurements beside the numbers
// the literature published for the same set-up.
//
// # The rig
//
// RunRig builds one run: a link.Bottleneck (one drop-tail queue, rate,
// delay and loss per direction), gVisor TCP flows on it (tcpflow), as
// root Linux's own TCP in network namespaces (kerneltcp: reno, cubic and
// bbr; these kernels have no vegas, so bbr stands for the delay-based
// family), and optionally a viewer: an opensim/region simulator, the synthetic viewer
// (internal/lab/viewer) and a relay whose datagrams cross the same
// bottleneck as flows "lludp up" and "lludp down", each costing its
// payload plus 28 bytes of IPv4 and UDP header (RFC 791, RFC 768). The
// sidecar (throttle.Sidecar) reads the viewer's datagrams as its host
// sees them and, for the fairgrid modes, sends its AgentThrottle across
// the bottleneck as the viewer; in the stock mode it only measures. Every
// statistic comes from the bottleneck (what each flow delivered, each
// packet's wait in the queue) and from what the TCP receivers read; a run
// leaves its warm-up (slow start, the viewer's login and first
// decisions) out.
//
// Runs are real time, since the region and the viewer talk over UDP
// sockets, which a testing/synctest bubble cannot wait on; they take
// little CPU (a few thousand packets a second), so runEach runs several
// at once. Given a seed, the links' losses and the stacks' random choices
// repeat; real TCP's timing still follows the goroutines' scheduling.
//
// # Segment size
//
// The controllers compute the rate with s = the viewer's mean payload
// (RFC 5348 §3.1, as Linux's CCID 3); TFRC-SP (RFC 4828 §3) argues for a
// nominal 1460 bytes instead, so that a flow of small packets gets the
// bytes a TCP flow of full segments gets at the same loss and RTT. The
// coexistence scenario measures both beside one bulk TCP flow, through
// the controllers' own setting (RigViewer.Segment, control.segment):
// window tracking's rate cwnd·s/SRTT and the TFRC equation are both
// proportional to s.
//
// # The multiplexer
//
// The multiplexing scenario (Saldana et al., IEEE CCNC 2014) runs its
// own rig: two branches of application-limited game TCP flows, one of
// them through a TCM-like multiplexer on the path (tcpflow.AddFlowVia):
// the branch's packets, both ways, wait for the end of a round of T (the
// sawtooth delay), their TCP/IP headers are compressed against a
// per-flow context (RFC 1144's packet kinds), and a round's packets cross
// the shared bottleneck in bundles of up to 1,500 bytes behind a tunnel
// header; the far end rebuilds the native packets exactly and hands them
// on (tcpflow.Net.Receive). The bottleneck carries the compressed bytes.
//
// # Published numbers
//
// Each scenario's Comparisons name their source; where a paper was read
// only as the issue quotes it, the source says so.
package scenario
