module github.com/fairgrid/fairgrid

go 1.26.0

require github.com/gopacket/gopacket v1.7.7

require (
	golang.org/x/net v0.63.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
