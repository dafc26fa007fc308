//go:build !linux

package throttle

import (
	"context"
	"errors"
)

// ErrNoRawSocket: sending as the viewer needs Linux raw sockets here.
var ErrNoRawSocket = errors.New("sending as the viewer needs Linux raw sockets; --dry-run measures and decides without sending")

// RawSender is available on Linux only.
type RawSender struct{}

func NewRawSender() (*RawSender, error)                { return nil, ErrNoRawSocket }
func (*RawSender) Send(context.Context, Request) error { return ErrNoRawSocket }
func (*RawSender) Close() error                        { return nil }
