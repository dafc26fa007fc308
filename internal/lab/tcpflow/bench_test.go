package tcpflow

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// benchChunk is what one benchmark operation moves: 1 MiB.
const benchChunk = 1 << 20

// BenchmarkTransfer is what real TCP through the lab costs: one CUBIC
// download moving 1 MiB per operation through a bottleneck of unlimited
// rate and 1 ms of delay each way, so the two gVisor stacks, the
// bottleneck and the hand-offs between them are all that limit it.
// BenchmarkKernelLoopback moves the same over the kernel's loopback TCP in
// the same run, as the baseline.
func BenchmarkTransfer(b *testing.B) {
	pipe := link.PipeConfig{Delay: time.Millisecond}
	delivered := make(chan int, 4096)
	var down link.Flow
	bn, err := link.NewBottleneck(link.BottleneckConfig{Up: pipe, Down: pipe, Tap: func(e link.Event) {
		if e.Kind == link.Delivered && e.Flow == down {
			select {
			case delivered <- len(e.Packet):
			default: // the counter is behind: it reads the total below
			}
		}
	}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	n, err := New(bn, Config{Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	f, err := n.AddFlow(FlowConfig{Name: "bulk", CC: CUBIC})
	if err != nil {
		b.Fatal(err)
	}
	down = f.Link(link.Down)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { bn.Run(ctx); done <- struct{}{} }()
	go func() { n.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	// Wait until the application has read its first chunk: the handshake
	// and slow start are not the steady state.
	next := uint64(benchChunk)
	for f.Read(link.Down) < next {
		<-delivered
	}
	var packets int
	b.SetBytes(benchChunk)
	for b.Loop() {
		next += benchChunk
		for f.Read(link.Down) < next {
			<-delivered
			packets++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(packets, 1)), "ns/packet")
}

func BenchmarkKernelLoopback(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, bulkWrite)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.SetBytes(benchChunk)
	for b.Loop() {
		if _, err := io.CopyN(io.Discard, c, benchChunk); err != nil {
			b.Fatal(err)
		}
	}
}
