// Package doccheck has no code of its own: its tests hold the repository's
// documentation to the rule that docs keep the method and the current
// state, and measurements are generated tables under docs/results/, each
// with the command, date and machine that made it (docs/development.md,
// "Results are generated"). TestDocLinks in cmd/fairgrid checks the links.
package doccheck
