//go:build !unix

package gateway

import "errors"

// openFiles: no RLIMIT_NOFILE here.
type openFiles struct{}

func (openFiles) get() (soft, hard uint64, err error) { return 0, 0, errors.ErrUnsupported }
func (openFiles) set(uint64) error                    { return errors.ErrUnsupported }
