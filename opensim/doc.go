// Package opensim is a packet scheduler for OpenSim-compatible region
// servers: two levels of token buckets and proportional fair queuing, the
// server design of the St Andrews thesis (Oliver, 2011, chapter 8), as a
// library a server embeds and fairgrid's test simulator uses. It imports
// the standard library and lludp's message categories only; it is
// deterministic, takes the time in every call, and never reads a clock or
// starts a goroutine. OpenSim's own behaviour, with sources:
// ../shared/docs/protocol.md §8.
//
// # Channels
//
// A client's traffic is queued in five channels — Avatar, Task, Texture,
// Layer, Asset — instead of OpenSim's seven categories. An AgentThrottle's
// seven values (bits/s) become channel rates (bytes/s):
//
//	Layer   = Land + Wind + Cloud
//	Texture = Texture
//	Asset   = Asset
//	Avatar  = Task × AvatarShare    (default 0.8: OpenSim's former State share of Task)
//	Task    = Task × (1 − AvatarShare)
//
// and the Resend value is spread over the five in proportion to those,
// because a resend is queued at the head of its original packet's channel
// rather than in a Resend queue of its own. ExampleChannelRates prints the
// two side by side for the classic viewer's 1,500 kbit/s request:
//
//	OpenSim master (B/s)          fairgrid (B/s)
//	Resend    19200               (spread over the channels)
//	Land      16640 ┐
//	Wind       3328 ├─────────►   Layer     25884
//	Cloud      3328 ┘
//	Task      61952 ──────────►   Avatar    55068, Task 13767
//	Texture   61952 ──────────►   Texture   68836
//	Asset     25600 ──────────►   Asset     28444
//
// Each channel is clamped to [ChannelMin, ChannelMax] and the total scaled
// down to ClientMax, as OpenSim's SetThrottles does; values that are NaN,
// infinite or negative count as 0, and a Throttles block that is not 28
// bytes uses what it has; all of it is counted.
//
// The channels are lludp's (lludp.Channel, beside the categories they
// refine): lludp.ChannelOf decides a message's channel from its category,
// moving the avatar-state messages of Task (OpenSim's former State
// sub-category, protocol.md §8.1) to Avatar. This package names them
// short (Avatar, Task, Texture, Layer, Asset); capture's tracker reads
// them from lludp without importing the scheduler.
//
// # Two levels of token buckets
//
// Level one: each client has a token bucket at its total rate (the sum of
// its channels) with a depth of BurstTime of that rate (at least MinBurst).
// A scene bucket at SceneMax sits above all clients. A bucket lets a packet
// leave while it holds a positive number of tokens and takes the whole
// packet, so it may go negative — OpenSim's TokenBucket.RemoveTokens does the
// same — and a packet larger than the burst leaves from a full bucket, the
// client then waiting until the debt is paid. Tokens count in integer
// nano-bytes: a rate in bytes/s times nanoseconds adds exactly.
//
// Level two: within a client, the channels share its rate by start-time
// fair queuing (Goyal, Vin, Cheng 1996) weighted by the channel rates. A
// channel's packets carry start tags S = max(v, F) and finish tags
// F = S + L/w; the channel with the smallest start tag goes next and the
// client's virtual time v becomes that tag. Backlogged channels therefore
// share the client's rate in proportion to their rates, and an idle
// channel's share goes to the busy ones: the client's total is
// work-conserving, unlike OpenSim, where an idle category's rate is lost.
//
// # OpenSim's category buckets (Config.ChannelBuckets)
//
// Lending is a choice. With ChannelBuckets set, the scheduler does what
// OpenSim 0.9.2.2 does: each throttle category has a token bucket of its
// own (LLUDPClient.cs:250-262 creates one TokenBucket per category;
// SetThrottles, :449-476, sets each one's rate and burst), and
// DequeueOutgoing (:576-710) lets a category's head packet leave only if
// that category's RemoveTokens succeeds (TokenBucket.cs:259-272), so what
// an idle category does not use, no other category gets. The buckets are
// OpenSim's categories as the channels gather them: Layer (Land + Wind +
// Cloud), Texture, Asset, and one Task bucket that the Avatar and Task
// channels share at their summed rate, as avatar updates are Task traffic
// in OpenSim. A bucket is rate × BurstTime deep (SetThrottles:
// RequestedBurst = rate × m_burstTime), at most MAXBURST, 7,500 bytes
// (TokenBucket.cs:54, applied at :98-108), at least MinBurst, and like
// OpenSim's it lets a packet leave while positive and may go negative
// (RemoveTokens). A client is ready when its own bucket and the bucket of
// at least one backlogged channel hold tokens; among those channels the
// fair queuing above picks, and the packet is charged to its category's
// bucket, the client's and the scene's. With every category busy the
// rates are the same in both modes; with some idle, a client gets the sum
// of its busy categories' rates (TestChannelBucketsRates).
//
// Differences that remain: resends are charged to their channel's bucket,
// whose rate includes its share of the Resend value (OpenSim: a Resend
// bucket of its own, served first); OpenSim's leaf buckets start empty and
// skip their first drip (TokenBucket.cs), fairgrid's start full; and the
// client bucket still polices the total (OpenSim's client bucket only
// scales its children's rates, TokenBucket.cs:141-155, which with
// SetThrottles' clamp comes to the same total). The cost is one branch per
// packet in the default mode (BenchmarkEnqueueNext) and, in this mode, a
// look at each backlogged category's bucket when a client is parked: still
// O(1).
//
// Avatar priority (AvatarPriority): Avatar packets go first while a second
// bucket at Avatar's own rate has tokens; those bytes are not charged to
// Avatar's fair-queuing tags, so beyond its rate Avatar competes like any
// channel. With every channel busy Avatar then gets its rate plus its share
// of the rest: unfair by design, for the latency of avatar updates.
//
// Across clients the same fair queuing, weighted by the clients' rates,
// decides whose packet leaves when several may: clients share the scene cap
// in proportion to their rates, as OpenSim's DripRateModifier scales every
// client by the same factor, and a client below its share keeps what it
// uses. A client whose bucket is empty waits in a timer queue until it
// refills and then rejoins at the current virtual time: no credit for time
// it could not send.
//
// # Implementation
//
// Ready clients wait in a calendar queue by start tag, waiting clients in
// another by refill time (Brown, CACM 1988; with the find-first-set bitmaps
// of Eiffel, Saeed et al., NSDI 2019): 8,192 slots, each a FIFO list
// threaded through the clients, and a two-level bitmap that finds the first
// non-empty slot in a few instructions, so Enqueue and Next are O(1) where a
// binary heap of 10,000 clients sifts 13 levels per packet. Ready slots are
// 2^-12 virtual seconds wide (244 µs of a client's rate: less than one
// packet of a 640 kB/s client), so clients leave in start-tag order to
// within a packet, first come first served among tags closer than that.
// Waiting slots are 2^17 ns (131 µs) wide, a wake-up rounded up to the
// slot's end: tokens accrue meanwhile, so no rate is lost, and Next's wait
// may name a time up to 131 µs after the exact refill. Keys beyond a
// calendar's horizon (2 virtual seconds; 1.07 s) wait in a small overflow
// heap. Removing and re-throttling a client unlink it in O(1).
//
// With thousands of clients most of a packet's time is memory latency: a
// client's state is not in the cache when its turn comes. The hot fields
// of a client are packed apart from its statistics and rates, the head
// packet of each channel is kept in the client itself, Next prefetches the
// clients next in line and their queued packets (two instructions of
// assembly on amd64 and arm64: Go has no prefetch intrinsic), and
// EnqueueBatch and NextBatch, which a sender using sendmmsg wants anyway,
// prefetch the packets' clients ahead of their turn.
//
// # Queues and drops
//
// Each channel's queue is bounded by QueueBytes and QueuePackets. A new
// packet beyond either is refused (tail drop) and counted; a resend is never
// refused, since dropping it would lose a reliable packet for good. Bytes are
// conserved: EnqueuedBytes = SentBytes + DiscardedBytes (queued when a
// client was removed) + what is queued.
//
// # Defined behaviour for bad input
//
// An unknown or removed client: ErrUnknownClient, counted. A packet size
// outside [1, MaxPacket] or a channel out of range: an error, counted. Time
// that goes backwards: the scheduler's clock holds still (no tokens lost or
// invented), the call is counted, and Next's wait still counts from the time
// given.
//
// # Where fairgrid differs from OpenSim on purpose
//
//   - Resends stay in their original channel (OpenSim: one Resend bucket
//     at the request's Resend rate, ahead of everything).
//   - By default idle channels lend their share to busy ones (OpenSim:
//     no lending); Config.ChannelBuckets chooses OpenSim's way.
//   - Avatar updates are a channel of their own with optional priority
//     (OpenSim today: part of Task).
//   - Per-channel floors apply to the five channels (default 500 B/s, the
//     bucket floor) rather than OpenSim master's 1000 B/s per category.
//   - No 50-unacked stall: that is the server's reliability layer, not the
//     scheduler's.
//   - The 0.9.2.2 quirks (totals above the maximum inflated, Asset set from
//     Texture) are not reproduced.
//
// Everywhere else the rates are OpenSim's arithmetic: with every channel
// busy and no resends requested, each channel gets what OpenSim's buckets
// give the categories it gathers (TestOpenSimCompatibility).
package opensim
