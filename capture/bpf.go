package capture

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// packetOutgoing is PACKET_OUTGOING, the packet type of a frame the host
// sends (linux/if_packet.h), read through the SKF_AD_PKTTYPE extension.
const packetOutgoing = 4

// maxPortRanges bounds the filter's length: every jump must reach the
// final reject within 255 instructions.
const maxPortRanges = 16

// udpFilter is a classic BPF program over Ethernet frames that accepts UDP
// over IPv4 (first fragments only; later ones carry no ports) or IPv6 (UDP
// right after the fixed header) with either port in ports; nil ports accept
// every UDP port. With dropOutgoing, frames the host sends are rejected: on
// loopback each datagram is seen once going out and once coming in. What it
// passes is parsed again in user space, so it only has to be tight.
func udpFilter(ports Ports, dropOutgoing bool) ([]bpf.Instruction, error) {
	if len(ports) > maxPortRanges {
		return nil, fmt.Errorf("%d port ranges, at most %d", len(ports), maxPortRanges)
	}
	const (
		accept      = 0x40000 // bytes of the frame to keep
		reject      = 0xFF    // placeholder: resolved to a jump to the final reject
		etherType   = 12
		ipv4        = 14
		ipv4Proto   = ipv4 + 9
		ipv4Frag    = ipv4 + 6
		ipv6Next    = 14 + 6
		ipv6UDP     = 14 + 40
		etherIPv4   = 0x0800
		etherIPv6   = 0x86DD
		udpProtocol = 17
	)
	// X holds the offset of the UDP header when the port checks run.
	ports4 := []bpf.Instruction{}
	if len(ports) == 0 {
		ports4 = append(ports4, bpf.RetConstant{Val: accept})
	}
	for i, field := range []uint32{0, 2} { // source port, then destination port
		if len(ports) == 0 {
			break
		}
		ports4 = append(ports4, bpf.LoadIndirect{Off: field, Size: 2})
		for _, r := range ports {
			ports4 = append(ports4,
				bpf.JumpIf{Cond: bpf.JumpLessThan, Val: uint32(r.Lo), SkipTrue: 2},
				bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(r.Hi), SkipTrue: 1},
				bpf.RetConstant{Val: accept})
		}
		if i == 1 {
			ports4 = append(ports4, bpf.RetConstant{Val: 0})
		}
	}
	v4 := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: ipv4Proto, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: udpProtocol, SkipTrue: reject},
		bpf.LoadAbsolute{Off: ipv4Frag, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1FFF, SkipTrue: reject},
		bpf.LoadMemShift{Off: ipv4}, // X = 4·IHL
		bpf.TXA{},
		bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: ipv4},
		bpf.TAX{},
	}, ports4...)
	v6 := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: ipv6Next, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: udpProtocol, SkipTrue: reject},
		bpf.LoadConstant{Dst: bpf.RegX, Val: ipv6UDP},
	}, ports4...)

	var prog []bpf.Instruction
	if dropOutgoing {
		prog = append(prog,
			bpf.LoadExtension{Num: bpf.ExtType},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: packetOutgoing, SkipTrue: reject})
	}
	prog = append(prog,
		bpf.LoadAbsolute{Off: etherType, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: etherIPv4, SkipFalse: uint8(len(v4))})
	prog = append(prog, v4...)
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: etherIPv6, SkipFalse: uint8(len(v6))})
	prog = append(prog, v6...)
	prog = append(prog, bpf.RetConstant{Val: 0})
	last := len(prog) - 1
	for i, ins := range prog {
		if j, ok := ins.(bpf.JumpIf); ok && j.SkipTrue == reject {
			j.SkipTrue = uint8(last - i - 1)
			prog[i] = j
		}
	}
	return prog, nil
}
