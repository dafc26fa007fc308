package audit

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// TestEach: files audited in parallel give, in input order, exactly the
// reports each gives audited alone; a file that cannot be opened is
// handed on as its error; an emit error stops the rest.
func TestEach(t *testing.T) {
	var files [][]byte
	for seed := range uint64(5) {
		ds, err := capturetest.Session{Circuits: 2 + int(seed), Datagrams: 3000, Loss: 0.02, Seed: seed}.Generate()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, pcapOf(t, ds))
	}
	files = append(files, []byte("not a capture"))
	cfg := Config{Ports: capture.SimPorts, Series: true}
	open := func(i int) (Input, func() error, error) {
		r, err := capture.NewReader(bytes.NewReader(files[i]), cfg.Ports)
		if err != nil {
			return Input{}, nil, fmt.Errorf("file %d: %w", i, err)
		}
		return Input{Name: fmt.Sprint("file", i), Reader: r}, func() error { return nil }, nil
	}
	alone := func(i int) *Report {
		in, _, err := open(i)
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.Read([]Input{in}, nil)
		return a.Report()
	}
	for _, workers := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			var order []int
			err := Each(cfg, len(files), workers, open, func(i int, r *Report, err error) error {
				order = append(order, i)
				if i == len(files)-1 {
					if err == nil {
						t.Errorf("file %d: no error for a file that is not a capture", i)
					}
					return nil
				}
				if err != nil {
					t.Fatalf("file %d: %v", i, err)
				}
				if want := alone(i); !reflect.DeepEqual(r, want) {
					t.Errorf("file %d: the parallel audit differs from the file's own", i)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(order, []int{0, 1, 2, 3, 4, 5}) {
				t.Errorf("emitted in order %v", order)
			}
		})
	}
	stop := errors.New("disk full")
	emitted := 0
	err := Each(cfg, len(files), 2, open, func(int, *Report, error) error {
		emitted++
		if emitted == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || emitted != 2 {
		t.Errorf("Each returned %v after %d emits, want the emit error after 2", err, emitted)
	}
}
