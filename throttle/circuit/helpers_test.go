package circuit

import (
	"errors"
	"io"

	"github.com/fairgrid/fairgrid/capture"
)

// trackReader feeds every datagram of r to a new default Tracker.
func trackReader(r *capture.Reader) (*Tracker, error) { return trackWith(NewTracker(Config{}), r) }

// trackWith feeds every datagram of r to tr.
func trackWith(tr *Tracker, r *capture.Reader) (*Tracker, error) {
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return tr, nil
		}
		if err != nil {
			return tr, err
		}
		tr.Observe(d)
	}
}
