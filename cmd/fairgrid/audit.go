package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/audit/render"
	"github.com/fairgrid/fairgrid/internal/cli"
)

// progressClock is the progress bar's clock; tests replace it.
var progressClock = time.Now

// stderrIsTerminal says whether the progress bar has a terminal to draw
// on; tests replace it.
var stderrIsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runAudit(args []string, s stdio) int {
	fs := newFlagSet("audit", cli.AuditSynopsis, s)
	format := formatFlag(fs, "output format: `text` (a table) or json (one document: files, circuits, messages)")
	seconds := fs.Bool("seconds", false, "with --format json: also one object per circuit, direction and second, and the requests (seen and replayed)")
	segment := cli.SegmentFlag(fs) // the verdict's and the replayed controllers'; both fair rates are always reported
	csvDir := fs.String("csv", "", "also write circuits.csv, seconds.csv and requests.csv into `DIR`")
	parquetDir := fs.String("parquet", "", "audit each FILE alone, in parallel on all cores, and write circuits.parquet, seconds.parquet and requests.parquet into `DIR`, one row group per file")
	htmlPath := fs.String("html", "", "also write one self-contained HTML `FILE` with the figures (inline SVG, no network, no JavaScript)")
	live := fs.String("live", "", "audit a live capture on this `interface` (needs CAP_NET_RAW)")
	duration := fs.Duration("duration", 0, "with --live: stop after this long (required)")
	capFlags := input.BindFlags(fs)
	if code, ok := parseFlagsArgs(fs, cli.AuditSynopsis, args, s); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid audit: "+format+"\n", a...)
		return exitUsage
	}
	ports, sims, tmpl, err := capFlags.Parse()
	if err != nil {
		return usageErr("%v", err)
	}
	if *seconds && *format != "json" {
		return usageErr("--seconds needs --format json (--csv always writes seconds.csv)")
	}
	switch {
	case *live != "" && fs.NArg() > 0:
		return usageErr("--live takes no files")
	case *live != "" && *duration <= 0:
		return usageErr("--live needs --duration: the report is written when the capture ends")
	case *live == "" && *duration != 0:
		return usageErr("--duration is for --live")
	case *live == "" && fs.NArg() == 0:
		return usageErr("no captures named (FILE..., - for stdin, or --live IFACE)")
	}
	if *parquetDir != "" && (*live != "" || *csvDir != "" || *htmlPath != "") {
		return usageErr("--parquet audits each file alone; --live, --csv and --html take one audit of everything: run them apart")
	}
	cfg := audit.Config{Ports: ports, Sims: sims, Template: tmpl, Segment: *segment,
		Series: *seconds || *csvDir != "" || *htmlPath != "" || *parquetDir != ""}
	note := func(msg string) { fmt.Fprintf(s.err, "fairgrid audit: %s\n", msg) }
	if *parquetDir != "" {
		out := &cli.ResultWriter{W: s.out}
		code := exitOK
		if !render.EachFile(cfg, fs.Args(), input.NewStdin(s.in), *parquetDir, *format == "json", out, note) {
			code = exitFail
		}
		return out.Finish(s.err, "audit", code)
	}
	a, err := audit.New(cfg)
	if err != nil {
		return usageErr("%v", err)
	}

	failed := false
	if *live != "" {
		ctx, stop := cli.RunContext(*duration, cli.PlainNotice(s.err, "fairgrid audit"))
		defer stop()
		if err := a.ReadLive(ctx, *live, ports); err != nil {
			note(err.Error())
			failed = true
		}
	} else {
		var opened []*input.Source
		stdin := input.NewStdin(s.in)
		for _, arg := range fs.Args() {
			oc, err := input.OpenCapture(arg, stdin, ports)
			if err != nil {
				note(err.Error())
				failed = true
				continue
			}
			defer oc.Close()
			opened = append(opened, oc)
		}
		if len(opened) == 0 {
			return exitFail // each reason is on stderr; an empty report would say nothing more
		}
		// Ctrl-C stops reading: the report covers what was read, and says
		// so.
		ctx, stop := cli.RunContext(0, cli.PlainNotice(s.err, "fairgrid audit"))
		defer stop()
		var bar func(int64) *audit.Progress
		if stderrIsTerminal(s.err) {
			bar = func(total int64) *audit.Progress { return audit.NewProgress(s.err, total, progressClock) }
		}
		a.ReadFiles(ctx, opened, bar)
		stop() // a second Ctrl-C ends the program
	}

	r := a.Report()
	for _, p := range r.Unread() {
		note(p)
		failed = true
	}
	out := &cli.ResultWriter{W: s.out}
	bw := bufio.NewWriterSize(out, 64<<10)
	if *format == "json" {
		shown := *r
		if !*seconds {
			// Kept for --csv and --html; the JSON has them with --seconds.
			shown.Seconds, shown.Requests = nil, nil
		}
		err = audit.WriteJSON(bw, &shown)
	} else {
		err = audit.WriteText(bw, r)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil && out.Err == nil {
		out.Err = err
	}
	if *csvDir != "" {
		if err := audit.WriteCSV(*csvDir, r); err != nil {
			note(err.Error())
			failed = true
		}
	}
	if *htmlPath != "" {
		if err := render.WriteHTMLFile(*htmlPath, r); err != nil {
			note(err.Error())
			failed = true
		}
	}
	for _, w := range r.Warnings {
		note("warning: " + w)
	}
	code := exitOK
	if failed {
		code = exitFail
	}
	return out.Finish(s.err, "audit", code)
}
