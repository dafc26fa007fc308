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
// (internal/lab/viewer) and a relay (link.Relay on the shared bottleneck)
// whose datagrams cross the same bottleneck as flows "lludp VIEWER up"
// and "lludp VIEWER down", each costing its payload plus 28 bytes of IPv4
// and UDP header (RFC 791, RFC 768). The
// sidecar (sidecar.Sidecar) reads the viewer's datagrams as its host
// sees them and, for the fairgrid modes, sends its AgentThrottle across
// the bottleneck as the viewer; in the stock mode it only measures. Every
// statistic comes from the bottleneck (what each flow delivered, each
// packet's wait in the queue) and from what the TCP receivers read; a run
// leaves its warm-up (slow start, the viewer's login and first
// decisions) out. Every part of a run is a member of one group.Group:
// the first to fail ends the run, and its error is the run's. A front-end
// that runs more than one rig, or more beside it, builds each with NewRig
// and adds it to its own group (Rig.AddTo): the demo (internal/lab/demo)
// runs the stock viewer's rig and fairgrid's side by side, reads its
// per-interval rows from RigViewer.AfterTick, and ends both at its last
// row.
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
// # The documents
//
// Each scenario reproduces one of the source documents in ../shared/seeds
// (README.md there names each): coexistence the NS2 study of WoW beside
// an FTP upload (000), multiplexing the tcmtf list's NS2 results with a
// sawtooth delay on one branch (001, cases A–D), mongoose the thesis's
// chapter 7 (002), wireless-buffers the QoS-TCP slides' uplink
// unfairness (003). Every figure a scenario quotes as published is a
// Figure made by cite with the document's file, the line it stands on
// and the words there; a test finds each on its line. A Comparison puts
// a measurement beside it with a differs (what we scaled down or chose
// where the document is silent) and a verdict in one vocabulary: Agrees
// or Disagrees with the document's own claim, judged on the seeds'
// central half (their 25th to 75th percentile: no one seed settles it), or
// Reported (ours, or no claim the lab can judge); what no document gives
// is labelled ours, and always reported. Lines the prose refers to are
// declared by ref, and the same test reads them. With Options.Seeds
// every run is repeated and each comparison reports the median and the
// spread. WriteMarkdown prints docs/lab.md whole: the lab's method
// (embedded from labdoc) around each scenario's table, headed by the
// command that made the run; Render rebuilds a result saved with --out
// from its runs, so that the page can be printed again without running.
//
// # Multiplexing
//
// The multiplexing scenario runs its own rig: two branches of
// application-limited game TCP flows, each with hosts of their own (a
// tcpflow net on an uncongested access link), joined through one shared
// bottleneck; the first branch's client→server packets wait for the end
// of a round of T on their way into it (the document's sawtooth delay),
// or, in our extra rows, go through internal/lab/tcm's multiplexer
// (header compression and bundling).
package scenario
