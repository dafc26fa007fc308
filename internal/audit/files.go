package audit

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/input"
)

// ReadFiles audits opened captures as Read does, merged in time order,
// until ctx ends: then reading stops as at the end of the inputs, the
// files are closed (so that a read blocked on a slow file, a FIFO,
// returns), and the report's warnings say how far it got. newProgress,
// if not nil, gives a progress bar for the files' total size.
func (a *Auditor) ReadFiles(ctx context.Context, srcs []*input.Source, newProgress func(total int64) *Progress) {
	asked := func() bool { return ctx.Err() != nil }
	inputs := make([]Input, len(srcs))
	var total int64
	for i, src := range srcs {
		src.Counter.R = interruptible{ctx, src.Counter.R}
		inputs[i] = Input{Name: src.Name, Reader: src.Capture, Counter: src.Counter, Asked: asked}
		total += src.Size
	}
	var progress *Progress
	if newProgress != nil {
		progress = newProgress(total)
	}
	for _, src := range srcs {
		progress.Track(src.Counter)
	}
	stop := context.AfterFunc(ctx, func() {
		for _, src := range srcs {
			src.Close()
		}
	})
	a.Read(inputs, progress.Update)
	stop()
	progress.Done()
	if ctx.Err() == nil {
		return
	}
	var read int64
	for _, src := range srcs {
		read += src.Counter.N
	}
	w := fmt.Sprintf("interrupted (Ctrl-C) after %d bytes", read)
	if total > 0 {
		w += fmt.Sprintf(" of %d", total)
	}
	a.warnings = append(a.warnings, w+": the report covers the datagrams read before")
}

// interruptible ends a read once ctx has: the capture reader then stops
// as at the end of its input.
type interruptible struct {
	ctx context.Context
	r   io.Reader
}

func (i interruptible) Read(p []byte) (int, error) {
	if err := i.ctx.Err(); err != nil {
		return 0, err
	}
	return i.r.Read(p)
}

// Unread says, for each file of r that yielded nothing and for a report
// without circuits, that nothing could be audited; nil if all was read.
func (r *Report) Unread() []string {
	var problems, names []string
	for _, f := range r.Files {
		names = append(names, f.Name)
		if f.Datagrams == 0 && (f.StoppedAt != nil || f.Bytes == 0) {
			problems = append(problems, f.Name+": nothing could be read")
		}
	}
	if len(r.Circuits) == 0 {
		in := "the input"
		if len(names) > 0 {
			in = strings.Join(names, ", ")
		}
		problems = append(problems, "no LLUDP circuits in "+in)
	}
	return problems
}

// ReadLive audits a live capture on iface until ctx ends.
func (a *Auditor) ReadLive(ctx context.Context, iface string, ports capture.Ports) error {
	r, err := capture.OpenLive(iface, ports)
	if err != nil {
		return err
	}
	defer r.Close()
	// A blocked read returns once the socket is closed.
	stop := context.AfterFunc(ctx, func() { r.Close() })
	defer stop()
	a.Read([]Input{{Name: iface, Reader: r, Asked: func() bool { return ctx.Err() != nil }}}, nil)
	return nil
}
