package throttle

import (
	"math"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// ViewerSplit splits a total rate over the seven AgentThrottle categories
// the way the Second Life viewer does; lludp.ViewerSplit is the one
// definition, beside the message it fills, and this converts the loop's
// unit to its bits per second.
func ViewerSplit(total ratecalc.Rate) [lludp.NumCategories]float32 {
	return lludp.ViewerSplit(total.BitsPerSecond())
}

// DemandSplit divides a request over the seven categories by what each
// used over the last interval (used, bits/s per category; Resend counts
// the retransmitted bytes, which OpenSim sends in its Resend category
// whatever their message, protocol.md §8.6). base is the request split in
// the fixed proportions (the viewer's, or the configured weights); the
// result sums to base's total.
//
// OpenSim's category buckets do not lend to each other: a category's
// unused rate is lost (protocol.md §8.4; LLUDPClient.DequeueOutgoing and
// TokenBucket.RemoveTokens in 0.9.2.2). A region resending terrain sends
// Land, which the viewer's proportions give an eighth of the total; the
// rest waits idle in Texture and Task buckets while Land's queue backs up.
// So the total is divided by demand:
//
//   - demandFloor of it in base's proportions, whatever the demand: a
//     category that starts sending has a rate to start from, and the
//     viewer's proportions remain the floor;
//   - then each category what it used times demandHeadroom, as far as the
//     rest goes (in proportion to those needs when they exceed it): a busy
//     category doubles each interval until it is served, the way TFRC
//     lets a sender reach twice what arrived (RFC 5348 §4.3);
//   - what the needs leave, in base's proportions.
//
// With no usage measured yet it is base. With every category busy in the
// viewer's proportions it is base. It never asks more in total than base.
func DemandSplit(base [lludp.NumCategories]float32, used [lludp.NumCategories]float64) [lludp.NumCategories]float32 {
	var b, parts [lludp.NumCategories]float64
	for i, v := range base {
		b[i] = float64(v)
	}
	if !apportion(b[:], used[:], parts[:]) {
		return base
	}
	var out [lludp.NumCategories]float32
	for i, p := range parts {
		out[i] = float32(p)
	}
	return out
}

// apportion divides the sum of base over its places by what each used,
// as DemandSplit describes: demandFloor of it in base's proportions, then
// demandHeadroom times each place's use as far as the rest goes, then
// what is left in base's proportions. It writes out and reports whether
// there was any use to follow (else out is untouched).
func apportion(base, used, out []float64) bool {
	var total, need float64
	for i, b := range base {
		total += b
		need += needOf(used[i])
	}
	if !(need > 0) || !(total > 0) {
		return false
	}
	rest := total * (1 - demandFloor)
	scale, left := 1.0, rest-need
	if need > rest {
		scale, left = rest/need, 0
	}
	for i, b := range base {
		out[i] = demandFloor*b + scale*needOf(used[i]) + left*b/total
	}
	return true
}

// needOf is what a place that used u asks for: demandHeadroom times it,
// and nothing for a use that is not a finite positive rate.
func needOf(u float64) float64 {
	if u > 0 && !math.IsInf(u, 0) {
		return demandHeadroom * u
	}
	return 0
}

// demandHeadroom is how far a category's rate may run ahead of what it
// used: twice, as far as the total goes.
const demandHeadroom = 2

// demandFloor is the part of a request split in the fixed proportions
// whatever the demand.
const demandFloor = 0.1

// usedPerCategory converts two readings of a circuit's downstream
// counters, elapsed apart, into bits/s per throttle category: the
// retransmitted bytes in Resend, the rest of each message category's
// bytes in its own (resends are taken from the categories in proportion,
// since a retransmission's category is not counted apart).
func usedPerCategory(now, then circuit.DirStats, elapsed time.Duration) [lludp.NumCategories]float64 {
	var used [lludp.NumCategories]float64
	if elapsed <= 0 {
		return used
	}
	// Counters only grow; a reading older than the circuit counts from 0.
	grew := func(a, b uint64) float64 {
		if a < b {
			return float64(a)
		}
		return float64(a - b)
	}
	var throttled float64
	for i := range lludp.NumCategories {
		used[i] = grew(now.ByCategory[i], then.ByCategory[i])
		throttled += used[i]
	}
	resent := min(grew(now.ResentBytes, then.ResentBytes), throttled)
	keep := 1.0
	if throttled > 0 {
		keep = 1 - resent/throttled
	}
	perSecond := 8 / elapsed.Seconds()
	for i := range used {
		used[i] *= keep * perSecond
	}
	used[lludp.Resend] += resent * perSecond
	return used
}

// SplitMoved is the part of the total that moved between categories from
// old to now: half the sum of the differences over the total. A split
// that moves MinChange of it is a change worth a request.
func SplitMoved(now, old [lludp.NumCategories]float32) float64 {
	var diff, total float64
	for i := range now {
		diff += math.Abs(float64(now[i]) - float64(old[i]))
		total += float64(now[i])
	}
	if !(total > 0) {
		return 0
	}
	return diff / 2 / total
}
