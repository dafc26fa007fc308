package render

import (
	"errors"
	"io"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// WriteHTML writes r as one self-contained HTML page.
func WriteHTML(w io.Writer, r *audit.Report) error {
	if r == nil {
		return errors.New("html: nil report")
	}
	return errors.New("html: not written yet")
}
