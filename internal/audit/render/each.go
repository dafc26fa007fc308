package render

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/internal/audit"
)

// EachFile audits every file of args alone, on all cores (audit.Each):
// each report becomes one row group of the Parquet tables in dir and, on
// out, its table or, with asJSON, its JSON document (all of them one JSON
// array), in the order the files were named. note hears each problem (a
// file that could not be opened or read) and each report's warnings.
// It returns false if a file could not be audited or the tables not be
// written.
func EachFile(cfg audit.Config, args []string, stdin *input.Stdin, dir string, asJSON bool, out io.Writer, note func(string)) bool {
	pw, err := NewParquetWriter(dir)
	if err != nil {
		note(err.Error())
		return false
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	defer bw.Flush()
	var mu sync.Mutex // stdin is given up once
	open := func(i int) (audit.Input, func() error, error) {
		mu.Lock()
		defer mu.Unlock()
		src, err := input.OpenCapture(args[i], stdin, cfg.Ports)
		if err != nil {
			return audit.Input{}, nil, err
		}
		return audit.Input{Name: src.Name, Reader: src.Capture, Counter: src.Counter}, src.Close, nil
	}
	if asJSON {
		io.WriteString(bw, "[\n")
	}
	ok, emitted := true, 0
	err = audit.Each(cfg, len(args), runtime.GOMAXPROCS(0), open, func(i int, r *audit.Report, err error) error {
		if err != nil {
			note(err.Error())
			ok = false
			return nil
		}
		for _, p := range r.Unread() {
			note(p)
			ok = false
		}
		for _, w := range r.Warnings {
			note("warning: " + w)
		}
		if asJSON {
			if emitted > 0 {
				io.WriteString(bw, ",\n")
			}
			audit.WriteJSON(bw, r)
		} else {
			fmt.Fprintf(bw, "# %s\n", r.Files[0].Name)
			audit.WriteText(bw, r)
			fmt.Fprintln(bw)
		}
		emitted++
		return pw.WriteFile(r)
	})
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		note("parquet: " + err.Error())
		ok = false
	}
	if asJSON {
		io.WriteString(bw, "]\n")
	}
	return ok
}
