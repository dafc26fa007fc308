package main

import "context"

// runner is a front-end's part that runs until its context ends or it
// fails: a region, a viewer, a relay. The groups take it so that their
// tests can put a failing one in.
type runner interface{ Run(context.Context) error }
