package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/opensim/udpbatch"
)

// TestSendQueue: goroutines add datagrams under a lock standing for the
// core's and flush after letting it go, as the readers do. Every datagram
// arrives, each goroutine's in the order it added them, and nothing is
// left queued once they have all returned — a datagram added while
// another goroutine flushed was sent by that one.
func TestSendQueue(t *testing.T) {
	const senders, each = 4, 50
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	rx.SetReadBuffer(1 << 20)
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	q := newSendQueue(tx)

	got := make(chan []string, 1)
	go func() {
		var all []string
		buf := make([]byte, 64)
		rx.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on failure, not a wait
		for range senders * each {
			n, err := rx.Read(buf)
			if err != nil {
				break
			}
			all = append(all, string(buf[:n]))
		}
		got <- all
	}()

	var core sync.Mutex
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				core.Lock()
				q.add(fmt.Appendf(nil, "%d %d", s, i), to)
				core.Unlock()
				q.flush()
			}
		})
	}
	wg.Wait()
	q.mu.Lock()
	if len(q.pending) != 0 || q.flushing {
		t.Errorf("after every flush: %d datagrams pending, flushing %v; want none", len(q.pending), q.flushing)
	}
	q.mu.Unlock()

	all := <-got
	if len(all) != senders*each {
		t.Fatalf("received %d datagrams, want %d", len(all), senders*each)
	}
	next := make([]int, senders)
	for _, m := range all {
		var s, i int
		if _, err := fmt.Sscanf(m, "%d %d", &s, &i); err != nil || s < 0 || s >= senders {
			t.Fatalf("received %q", m)
		}
		if i != next[s] {
			t.Fatalf("sender %d: received %d, want %d (out of order)", s, i, next[s])
		}
		next[s]++
	}
	if e := q.errs.Load(); e != 0 {
		t.Errorf("%d send errors, want 0", e)
	}
}

// TestSendQueueFlusherSendsOthers: a datagram added while another
// goroutine flushes is sent by that goroutine, after what it was sending,
// and the adder's own flush returns at once.
func TestSendQueueFlusherSendsOthers(t *testing.T) {
	to := netip.MustParseAddrPort("192.0.2.1:9000")
	var q sendQueue
	var sent [][]string
	q.write = func(ds []udpbatch.Datagram) int {
		var batch []string
		for _, d := range ds {
			batch = append(batch, string(d.B))
		}
		sent = append(sent, batch)
		if len(sent) == 1 {
			// Another reader, meanwhile: it adds two and flushes.
			q.add([]byte("b"), to)
			q.add([]byte("c"), to)
			q.flush()
			if len(sent) != 1 {
				t.Errorf("the second flush sent while the first was flushing")
			}
		}
		return 0
	}
	q.add([]byte("a"), to)
	q.flush()
	want := [][]string{{"a"}, {"b", "c"}}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("batches sent %q, want %q", sent, want)
	}
	if len(q.pending) != 0 || q.flushing {
		t.Errorf("%d datagrams pending, flushing %v; want none", len(q.pending), q.flushing)
	}
}
