package render

import (
	"io"
	"testing"
)

// BenchmarkWriteHTML renders a report of 100 circuits × 600 s (the
// issue's bound: well under 1 s), with WriteParquet on the same report
// as the baseline measured in the same run.
func BenchmarkWriteHTML(b *testing.B) {
	r := makeReport(1, 100, 600)
	b.Run("html", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteHTML(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parquet", func(b *testing.B) {
		dir := b.TempDir()
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteParquet(dir, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
