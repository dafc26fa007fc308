// Package input opens what a person names on a command line as LLUDP
// input, telling the kinds apart by their first bytes, not their names:
// a pcap or pcapng capture (gzip-compressed too), a .bin file holding one
// raw datagram, a text file of hex datagrams one per line, "-" for
// standard input (a capture or hex lines), or a word that is no file,
// which may be a datagram in hex (ParseHex).
//
//	stdin := input.NewStdin(os.Stdin)
//	src, err := input.OpenCapture("trace.pcap.gz", stdin, ports)
//	if err != nil { … } // "trace.pcap.gz: no such file", "…: not a capture (pcap, pcapng or gzip)"
//	defer src.Close()
//	for { dg, err := src.Capture.Next(); … }
package input
