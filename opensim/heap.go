package opensim

// minHeap is a calendar's overflow: clients whose keys lie beyond the
// calendar's horizon, by slot number in wrap-around arithmetic. Entries are
// never removed from the middle: a client that leaves bumps its ticket, and
// stale entries are skipped when they surface.
type minHeap struct {
	items []heapItem
}

type heapItem struct {
	key    uint64
	client uint32
	ticket uint32
}

func less(a, b uint64) bool { return int64(a-b) < 0 }

func (h *minHeap) push(it heapItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h.items[i].key, h.items[p].key) {
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

func (h *minHeap) down(i int) {
	last := len(h.items)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && less(h.items[l].key, h.items[m].key) {
			m = l
		}
		if r < last && less(h.items[r].key, h.items[m].key) {
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
