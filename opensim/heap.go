package opensim

// minHeap orders clients by a key: the start tag (ready clients) or the
// time they may send again (waiting clients). Entries are never removed
// from the middle: a client that leaves, or whose key changes, bumps its
// ticket, and stale entries are skipped when they surface. That keeps
// removing and re-throttling a client O(1).
type minHeap struct {
	items []heapItem
	// wrap compares keys in wrap-around arithmetic (virtual-time tags).
	wrap bool
}

type heapItem struct {
	key    uint64
	client uint32
	ticket uint32
}

func (h *minHeap) less(a, b uint64) bool {
	if h.wrap {
		return int64(a-b) < 0
	}
	return a < b
}

func (h *minHeap) push(it heapItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i].key, h.items[p].key) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *minHeap) top() heapItem { return h.items[0] }

func (h *minHeap) pop() heapItem {
	it := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	h.down(0)
	return it
}

// replaceTop gives the top item a new key and restores the order: one
// sift instead of a pop and a push.
func (h *minHeap) replaceTop(key uint64) {
	h.items[0].key = key
	h.down(0)
}

func (h *minHeap) down(i int) {
	last := len(h.items)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l].key, h.items[m].key) {
			m = l
		}
		if r < last && h.less(h.items[r].key, h.items[m].key) {
			m = r
		}
		if m == i {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

func (h *minHeap) len() int { return len(h.items) }
