package main

import (
	"fmt"
	"io"

	labscenario "github.com/fairgrid/fairgrid/internal/lab/scenario"
)

const labRenderSynopsis = `DIR|FILE [--format text|json|markdown]

Prints a saved run of the lab again, from the results "fairgrid lab
SCENARIO --out DIR" wrote (DIR/all.json, or the file named), with this
build's comparisons and verdicts and without running anything: the
output is what the run's own command would have printed with --format,
headed by that command (docs/lab.md is "lab render DIR" of its run).`

func runLabRender(args []string, s stdio) int {
	fs := newFlagSet("lab render", labRenderSynopsis, s)
	format := formatFlag(fs, "output format: `text`, json, or markdown (docs/lab.md)", "markdown")
	if c, ok := parseFlagsArgs(fs, labRenderSynopsis, args, s); !ok {
		return c
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(s.err, "fairgrid lab render: want one directory or file, got %d arguments (see --help)\n", fs.NArg())
		return exitUsage
	}
	res, err := labscenario.RenderFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab render: %v\n", err)
		return exitFail
	}
	w := &resultWriter{w: s.out}
	writeLab(w, res, *format)
	return w.finish(s, "lab render", exitOK)
}

// writeLab writes a lab result in format: text, json or markdown.
func writeLab(w io.Writer, res labscenario.Result, format string) {
	switch format {
	case "json":
		labscenario.WriteJSON(w, res)
	case "markdown":
		labscenario.WriteMarkdown(w, res)
	default:
		labscenario.WriteText(w, res)
	}
}
