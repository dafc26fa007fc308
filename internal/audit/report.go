package audit

// The report's three tables. Each row type is one row of circuits, seconds
// and requests in every output (--format json, --csv, --parquet, --html),
// so a field's name is the same everywhere; units are in the names
// (_bit_per_s, _ms, _unix_ms, _bytes). A pointer is a value that can be
// unknown: nil is written as JSON null, an empty CSV cell and a Parquet
// null, never as 0 or infinity.

// Report is the audit of one or more captures.
type Report struct {
	Files    []FileResult `json:"files"`
	Circuits []Circuit    `json:"circuits"`
	Seconds  []Second     `json:"seconds,omitempty"`
	Requests []Request    `json:"requests,omitempty"`
	// JainIndex is Jain's fairness index of received/fair over the
	// circuits whose fair rate is known (congestion.md §5.7); nil with
	// fewer than two such circuits.
	JainIndex *float64      `json:"jain_index"`
	Messages  []MessageType `json:"messages"`
	// Segment is the verdict's choice of s: "mean" (the circuit's mean
	// datagram payload, RFC 5348) or "nominal" (1460 B, RFC 4828).
	Segment string `json:"segment"`
	// Warnings say what makes the report less trustworthy than it looks:
	// a capture cut short, a template that fails to decode more than 1 %
	// of the datagrams.
	Warnings []string `json:"warnings,omitempty"`
}

// FileResult says what was read of one input and where it stopped.
type FileResult struct {
	Name       string `json:"name"`
	Bytes      int64  `json:"bytes"`
	Datagrams  int64  `json:"datagrams"`
	NotLLUDP   int64  `json:"not_lludp"`
	Undecoded  int64  `json:"undecoded"`
	StoppedAt  *int64 `json:"stopped_at_byte"` // nil: read to the end
	StopReason string `json:"stop_reason,omitempty"`
	// UndecodedBy counts Undecoded and NotLLUDP by reason
	// ("unknown_message", "truncated", "other_port", …).
	UndecodedBy map[string]int64 `json:"undecoded_by_reason,omitempty"`
	// FirstUnixMs and LastUnixMs span the file's datagrams (0 with none).
	FirstUnixMs int64 `json:"first_unix_ms"`
	LastUnixMs  int64 `json:"last_unix_ms"`
}

// Fair-rate states, for the *_state fields: a fair rate is a number only
// when it is "known".
const (
	FairKnown     = "known"
	FairUnbounded = "unbounded: no loss"
	FairNoRTT     = "unknown: no RTT"
	FairNoData    = "unknown: too little traffic"
)

// Circuit is one circuit in one direction over the whole capture (the
// thesis's "per connection" view).
type Circuit struct {
	Circuit   string `json:"circuit" parquet:"circuit"`     // "viewer ip:port > sim ip:port"
	Direction string `json:"direction" parquet:"direction"` // "down" (simulator → viewer) or "up"
	Viewer    string `json:"viewer" parquet:"viewer"`
	Sim       string `json:"sim" parquet:"sim"`
	AgentID   string `json:"agent_id" parquet:"agent_id"`     // "" when not seen
	SessionID string `json:"session_id" parquet:"session_id"` // "" when not seen
	File      string `json:"file" parquet:"file"`             // the file it was first seen in

	StartUnixMs int64   `json:"start_unix_ms" parquet:"start_unix_ms"`
	DurationS   float64 `json:"duration_s" parquet:"duration_s"`
	Packets     int64   `json:"packets" parquet:"packets"`
	Bytes       int64   `json:"bytes" parquet:"bytes"`
	MeanPayload float64 `json:"mean_payload_bytes" parquet:"mean_payload_bytes"`

	MeanBitPerS float64 `json:"mean_bit_per_s" parquet:"mean_bit_per_s"`
	PeakBitPerS float64 `json:"peak_1s_bit_per_s" parquet:"peak_1s_bit_per_s"`

	Lost            int64   `json:"lost" parquet:"lost"`
	LossRate        float64 `json:"loss_rate" parquet:"loss_rate"`
	LossEvents      int64   `json:"loss_events" parquet:"loss_events"`
	LossEventRate   float64 `json:"loss_event_rate" parquet:"loss_event_rate"`
	Resent          int64   `json:"resent" parquet:"resent"`
	SpuriousResends int64   `json:"spurious_resends" parquet:"spurious_resends"`
	Duplicates      int64   `json:"duplicates" parquet:"duplicates"`

	RTTMs       *float64 `json:"rtt_ms" parquet:"rtt_ms,optional"` // from ping pairs only
	RTTSamples  int64    `json:"rtt_samples" parquet:"rtt_samples"`
	AckRTTMs    *float64 `json:"ack_rtt_ms" parquet:"ack_rtt_ms,optional"` // reported apart, never mixed in
	FairState   string   `json:"fair_state" parquet:"fair_state"`
	FairMeanS   *float64 `json:"fair_mean_s_bit_per_s" parquet:"fair_mean_s_bit_per_s,optional"`       // TFRC, s = mean payload
	FairNominal *float64 `json:"fair_nominal_s_bit_per_s" parquet:"fair_nominal_s_bit_per_s,optional"` // TFRC, s = 1460 B
	Mathis      *float64 `json:"mathis_bit_per_s" parquet:"mathis_bit_per_s,optional"`                 // with the verdict's s

	// Received/fair with the verdict's s: over the whole connection, and
	// the distribution of the per-second ratios.
	ReceivedOverFair *float64 `json:"received_over_fair" parquet:"received_over_fair,optional"`
	RatioMean        *float64 `json:"per_second_ratio_mean" parquet:"per_second_ratio_mean,optional"`
	RatioMedian      *float64 `json:"per_second_ratio_median" parquet:"per_second_ratio_median,optional"`
	RatioP25         *float64 `json:"per_second_ratio_p25" parquet:"per_second_ratio_p25,optional"`
	RatioP75         *float64 `json:"per_second_ratio_p75" parquet:"per_second_ratio_p75,optional"`
	// Per-second received rates, for the per-connection figure.
	MedianBitPerS float64 `json:"median_1s_bit_per_s" parquet:"median_1s_bit_per_s"`
	P25BitPerS    float64 `json:"p25_1s_bit_per_s" parquet:"p25_1s_bit_per_s"`
	P75BitPerS    float64 `json:"p75_1s_bit_per_s" parquet:"p75_1s_bit_per_s"`

	Requests           int64    `json:"requests" parquet:"requests"` // AgentThrottles seen
	LastRequestBitPerS *float64 `json:"last_request_bit_per_s" parquet:"last_request_bit_per_s,optional"`
	RequestedOverFair  *float64 `json:"requested_over_fair" parquet:"requested_over_fair,optional"`

	CategoryBitPerS [7]float64 `json:"category_bit_per_s" parquet:"-"` // lludp categories, in their order
	ChannelBitPerS  [5]float64 `json:"channel_bit_per_s" parquet:"-"`  // opensim channels, in their order

	// SegmentLossEventRate is the loss event rate per 1,460-byte segment
	// received, losses counted by bytes (ratecalc.SegmentLossEventRateOver,
	// what fairgrid's default controller measures), and FairTCP
	// ratecalc.TCPShareRate (the TFRC equation with CUBIC's window where
	// that is the larger) at 1,460 B, that rate and the ping RTT: the
	// audit's estimate of what a TCP flow on the path gets
	// (docs/fairness.md says how it compares with real TCP in the lab,
	// and where it cannot be trusted).
	// ReceivedOverTCP is received ÷ FairTCP: the verdict's ratio.
	SegmentLossEventRate float64  `json:"segment_loss_event_rate" parquet:"segment_loss_event_rate"`
	FairTCP              *float64 `json:"fair_tcp_bit_per_s" parquet:"fair_tcp_bit_per_s,optional"`
	ReceivedOverTCP      *float64 `json:"received_over_tcp" parquet:"received_over_tcp,optional"`

	// Verdict says how far received was from FairTCP: "3.1× its TCP-fair
	// rate", "within ±10 %", "unknown: no RTT".
	Verdict string `json:"verdict" parquet:"verdict"`
}

// Second is one circuit and direction in one 1 s bin (the thesis's "per
// second" view).
type Second struct {
	Circuit       string   `json:"circuit" parquet:"circuit"`
	Direction     string   `json:"direction" parquet:"direction"`
	UnixS         int64    `json:"unix_s" parquet:"unix_s"`
	Packets       int64    `json:"packets" parquet:"packets"`
	BitPerS       float64  `json:"bit_per_s" parquet:"bit_per_s"`
	Lost          int64    `json:"lost" parquet:"lost"`
	LossEventRate float64  `json:"loss_event_rate" parquet:"loss_event_rate"` // the estimator's value at the bin's end
	RTTMs         *float64 `json:"rtt_ms" parquet:"rtt_ms,optional"`
	FairState     string   `json:"fair_state" parquet:"fair_state"`
	FairBitPerS   *float64 `json:"fair_bit_per_s" parquet:"fair_bit_per_s,optional"` // with the verdict's s
	Ratio         *float64 `json:"received_over_fair" parquet:"received_over_fair,optional"`

	CategoryBitPerS [7]float64 `json:"category_bit_per_s" parquet:"-"`
	ChannelBitPerS  [5]float64 `json:"channel_bit_per_s" parquet:"-"`
}

// Request sources, for Request.Source.
const (
	SourceCapture      = "capture"       // an AgentThrottle seen in the capture (the viewer's or a sidecar's)
	SourceReplayVTCP   = "replay-vtcp"   // what the default controller, the virtual TCP, would have requested
	SourceReplayWindow = "replay-window" // what window tracking would have requested
	SourceReplayTFRC   = "replay-tfrc"
	SourceReplayStock  = "replay-stock" // the viewer's stock rule
)

// Request is one AgentThrottle seen in the capture, or one a fairgrid
// controller would have sent on this trace.
type Request struct {
	Circuit           string     `json:"circuit" parquet:"circuit"`
	UnixMs            int64      `json:"unix_ms" parquet:"unix_ms"`
	Source            string     `json:"source" parquet:"source"`
	TotalBitPerS      float64    `json:"total_bit_per_s" parquet:"total_bit_per_s"`
	CategoryBitPerS   [7]float64 `json:"category_bit_per_s" parquet:"-"`
	ReceivedBitPerS   float64    `json:"received_bit_per_s" parquet:"received_bit_per_s"` // over the second before it
	FairBitPerS       *float64   `json:"fair_bit_per_s" parquet:"fair_bit_per_s,optional"`
	RequestedOverFair *float64   `json:"requested_over_fair" parquet:"requested_over_fair,optional"`
}

// MessageType counts one message type over the capture.
type MessageType struct {
	Name    string `json:"name"`
	Packets int64  `json:"packets"`
	Bytes   int64  `json:"bytes"`
}
