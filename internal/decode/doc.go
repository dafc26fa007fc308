// Package decode is fairgrid decode: it reads the inputs a person names
// (capture/input: captures, hex, .bin files, standard input) and prints
// each LLUDP datagram, as text or a JSON object a line, or, with
// Config.Summary, only each circuit's measurements (throttle/circuit).
// Datagrams from captures carry their time, direction and circuit. A
// datagram that fails to decode is reported and the rest go on; Finish
// says whether everything decoded.
package decode
