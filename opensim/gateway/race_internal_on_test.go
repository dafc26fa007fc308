//go:build race

package gateway

// raceBuild: built with -race, which slows the simulations tenfold; they
// then run one seed each; the scale step (Makefile) runs every seed
// without it.
const raceBuild = true
