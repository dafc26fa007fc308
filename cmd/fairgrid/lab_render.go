package main

import (
	"fmt"

	"github.com/fairgrid/fairgrid/internal/cli"
	labscenario "github.com/fairgrid/fairgrid/internal/lab/scenario"
)

func runLabRender(args []string, s stdio) int {
	fs := newFlagSet("lab render", cli.LabRenderSynopsis, s)
	format := formatFlag(fs, "output format: `text`, json, or markdown (docs/lab.md)", "markdown")
	if c, ok := parseFlagsArgs(fs, cli.LabRenderSynopsis, args, s); !ok {
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
	labscenario.WriteFormat(w, res, *format)
	return w.finish(s, "lab render", exitOK)
}
