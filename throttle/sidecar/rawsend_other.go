//go:build !linux

package sidecar

import (
	"context"
	"errors"

	"github.com/fairgrid/fairgrid/throttle"
)

// ErrNoRawSocket: sending as the viewer needs Linux raw sockets here.
var ErrNoRawSocket = errors.New("fairgrid run needs Linux (raw sockets and AF_PACKET capture); on this OS, fairgrid proxy does the same as the viewer's SOCKS 5 proxy")

// RawSender is available on Linux only.
type RawSender struct{}

func NewRawSender() (*RawSender, error)                         { return nil, ErrNoRawSocket }
func (*RawSender) Send(context.Context, throttle.Request) error { return ErrNoRawSocket }
func (*RawSender) Close() error                                 { return nil }
