package cli

// The commands' synopses: what `fairgrid COMMAND --help` prints above
// the options.

// RunSynopsis is fairgrid run's.
const RunSynopsis = `[--config FILE] [--check-config [FILE]] [--interface IFACE] [--controller C] [--segment S] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L] [--log-format F]
       fairgrid run --demo [--duration D] [--link RATE,DELAY,LOSS,BUFFER] [--gateway=false] [--controller vtcp|window|tfrc|viewer] [--segment mean|nominal] [--interval D] [--format text|json]

The sidecar daemon: it captures the viewer's circuits on an interface,
measures loss and RTT, and every interval asks each simulator for a
TCP-fair rate with an AgentThrottle sent from the viewer's own address
(raw sockets: CAP_NET_RAW). configs/fairgrid.toml documents the
configuration; flags override it; SIGHUP reloads it. --dry-run measures,
decides, logs and exports, and sends nothing. --segment is the segment
size s of the TCP-fair rate: mean (the viewer's mean datagram payload, RFC
5348) or nominal (1460 bytes, TFRC-SP, RFC 4828), which asks for
1460/mean times as much (control.segment).

With --demo it runs the embedded default, on lab fairness's rig: a test
region, a link emulator (default 1M,50ms,1%,100: rate in bits/s, 64k to
1G; one-way delay, 0.5ms or more; random loss towards the viewer, a
fraction or a percentage; buffer in datagrams) and a stock viewer asking
for 1,500 kbps and following its ±10 % rule, all in this process, beside
a bulk TCP download (gVisor's userspace CUBIC) on the same link; fairgrid
reads the viewer's traffic from the emulator and sends its AgentThrottle
through it, so no root is needed. It prints a row per interval — received
rate, TCP-fair rate, loss event rate, RTT, what the viewer asked for, what
fairgrid asked for, what the region applied. A copy of the set-up runs
beside it with the stock viewer alone, and another with the stock viewer
reaching the region through fairgrid's gateway instead of the sidecar
(--gateway=false leaves it out). The verdict is the viewer's bytes/s ÷
the download's beside it, on the wire, for each (one TCP share:
0.8–1.25×); then the controller's own yardstick, labelled (the viewer's
payload ÷ its equation's TCP-fair rate), and the three side by side: the
download's throughput, the viewer's received rate and queueing delay, on
the wire. Runs shorter than 10 s
leave the download and the comparison out. --duration
must cover at least two intervals. Interrupted (Ctrl-C, SIGTERM), it prints
the verdict for the intervals that ran and exits 0.

Flags of one mode are errors in the other: --duration, --link,
--gateway and --format are the demo's; --config, --check-config, --interface,
--dry-run, --metrics, --log-level and --log-format the daemon's.`

// ProxySynopsis is fairgrid proxy's.
const ProxySynopsis = `[--listen ADDR] [--config FILE] [--check-config [FILE]] [--controller C] [--segment S] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L] [--log-format F]
       [--user U [--password-file F]] [--allow-ports LIST] [--sim-ports LIST] [--max-associations N] [--max-connects N]

A SOCKS 5 proxy (RFC 1928, username/password RFC 1929) for Second Life
and OpenSim viewers, on any OS and without root. In the viewer: Preferences
> Network & Files > Proxy Settings > "Use SOCKS 5 proxy for UDP traffic",
host 127.0.0.1, port 1080. Each UDP association gets one relay socket,
the endpoint the simulator sees. The proxy measures every circuit as
fairgrid run does, replaces the body of every AgentThrottle the viewer
sends with fairgrid's current request (same sequence number, flags and
acks), and sends its periodic requests from the association's socket.
CONNECT carries the viewer's login, capabilities and event queue (HTTP),
to the ports --allow-ports lists.

The configuration file, the controller, the metrics and the logs are
those of fairgrid run (configs/fairgrid.toml; flags override it; SIGHUP
reloads it), and its [proxy] table holds the proxy's own settings, each
the key of a flag here (--listen is proxy.listen, --user proxy.username,
--password-file proxy.password_file, and so on); they are read at start,
and a reload names those that changed as needing a restart. The
[capture] interface is not used. --check-config validates the
configuration, the credentials included, and exits. --dry-run measures,
decides, logs and exports, and changes nothing in the viewer's traffic.

Security: --listen is loopback by default. Any other address (a name is
resolved first) needs a username (--user) and a password, read from
--password-file or from the environment variable FAIRGRID_PROXY_PASSWORD,
never from the command line or the configuration file. UDP is accepted
only from the client that made the association and goes only to the
simulator ports (--sim-ports, capture.ports); CONNECT only to the allowed ports
(default 80, 443, 8002, 9000-13100, 12043, 12046) and, beyond loopback,
never to the host's loopback, link-local addresses or the proxy's own.
Sessions are capped per client address and in all (proxy.max_sessions),
idle ones end (proxy.idle_timeout, proxy.half_close_timeout), and failed
logins back off per address: docs/proxy.md.`

// GatewaySynopsis is fairgrid gateway's.
const GatewaySynopsis = `[--listen PUBLIC:PORT --region INTERNAL:PORT] [--config FILE] [--check-config [FILE]] [--controller C] [--segment S] [--interval D] [--scene-max BPS] [--bind ADDR] [--metrics ADDR] [--log-level L] [--log-format F] [--duration D]

A UDP gateway at an OpenSim region's public address: every viewer
circuit of the region passes through it, nothing is installed on the
viewer and nothing changed in OpenSim (docs/gateway.md). Set the region's
InternalAddress (Regions.ini) to a private address and ExternalHostName to
the gateway's, and run

    fairgrid gateway --listen PUBLIC:PORT --region INTERNAL:PORT

or list several regions as gateway.routes in the configuration file
(configs/fairgrid.toml, [gateway]). What the region sends each viewer is
scheduled by package opensim (two-level token buckets, proportional fair
queuing over Avatar, Task, Texture, Layer and Asset) at that viewer's
rate, the viewers sharing gateway.scene_bps; each viewer's rate is the
lesser of its own AgentThrottle and a TCP-fair rate the gateway measures
from the viewer's acks and pings ([control]: controller, segment,
interval, clamps), and the region's own throttle is kept there by
rewriting the viewer's AgentThrottle in flight and re-asserting it.

Only the configured regions are ever reached. New circuits are capped
(gateway.max_viewers, max_pending, max_per_prefix) and time out
(pending_timeout, idle_timeout). Flags override the file; SIGHUP reloads
the file (the controller, clamps, caps and timeouts change live; a
changed route, bind address or scheduler setting needs a restart, and the
log says so). --check-config validates and exits.`

// StatusSynopsis is fairgrid status's.
const StatusSynopsis = `[--wait D] [ADDR]

What a running fairgrid run, proxy or gateway does, one line per
circuit: the region, what is received, what fairgrid asks, one TCP
share, what the viewer asked, loss, RTT and queueing delay, and why. It
reads http://ADDR/status.json, the state the live page at http://ADDR/
shows. Without ADDR it asks the default metrics addresses in turn: the
proxy's 127.0.0.1:9102, run's 127.0.0.1:9101, the gateway's
127.0.0.1:9103. Exit 0 when some circuit receives, 1 when nothing flows
(or nothing answers). --wait D asks again until something flows or D
has passed: for a script that has just started the front-end and the
viewer.`

// AuditSynopsis is fairgrid audit's.
const AuditSynopsis = `[options] FILE... | --live IFACE --duration D

Audits the TCP-fairness of captured LLUDP traffic: per circuit and
direction, the received rate against the TCP-fair rate (RFC 5348's
equation at the measured loss event rate and ping RTT), with Mathis
beside it, per second and over the whole connection; the AgentThrottles
seen; Jain's index across circuits; per-category, per-channel and
per-message accounting. FILEs are pcap, pcapng or gzip captures, read in
time order as one trace so that circuits keep their identity across them;
- is stdin. The table's first column is the verdict: "3.1× its TCP-fair
rate", "within ±10 %", "no loss: fair rate unbounded", "unknown: no RTT".
A damaged capture is audited up to the damage, and the report says where
it stopped; Ctrl-C stops reading and reports what was read (exit 0). The
exit code is 1 if an input could not be opened or held nothing readable,
if no LLUDP circuit was found, or if the output could not be written; 2
for a bad command line.`

// DecodeSynopsis is fairgrid decode's.
const DecodeSynopsis = `[options] [HEX|FILE|- ...]

Decodes LLUDP datagrams. Each argument is a datagram in hex, a .bin file
holding one raw datagram, a pcap or pcapng capture (gzip-compressed too),
or a text file with one hex datagram per line. With no arguments, or the
argument -, stdin is read: a capture if it starts like one, else hex
datagrams one per line ('#' starts a comment). Datagrams from captures
carry their time, direction and circuit; --summary prints only each
circuit's measurements, and takes captures only. A datagram that fails to
decode is reported and the rest go on. The exit code is 1 if any failed,
if an input could not be read (a missing file, a broken capture, one with
no LLUDP) or held no datagram, or if the output could not be written.`

// RateSynopsis is fairgrid rate's.
const RateSynopsis = `--loss P --rtt D [--size BYTES] [--format text|json]

Prints the TCP-fair rate of a path with loss event rate P and round-trip
time D, by the TFRC equation (RFC 5348), the Padhye model (64 KiB window)
and the Mathis simplification, and one share: what a CUBIC or Reno flow
would take there (the audit's estimate and the metrics' share: the
equation with the larger of Reno's and CUBIC's average window between
timeouts). P is a fraction or a percentage
(0.03 or 3%); D a duration (100ms). JSON gives bits per second:
{"tfrc_bps":…,"padhye_bps":…,"mathis_bps":…,"tcp_share_bps":…}.`

// SimSynopsis is fairgrid sim's.
const SimSynopsis = `[--listen ADDR] [--activity A [--avatars N]] [--buckets opensim|fair] [--child-regions K [--position X,Y]] [--allow CODE:AGENT:SESSION,...] [--client-max BPS] [--scene-max BPS] [--avatar-priority] [--stress] [--metrics ADDR] [--log-format F] [--duration D] [--max-pending N] [--pending-timeout D] [--circuit-rate R] [--circuit-burst N] [--cpuprofile F] [--blockprofile F] [--mutexprofile F] [--trace F]

A test region simulator speaking LLUDP: viewers log in with UseCircuitCode
(any circuit code unless --allow restricts them), and it sends them the
traffic of an activity (standing, walking, flying, login, idle, terrain, objects, avatars, textures), scheduled
by package opensim at each client's AgentThrottle. It runs until
interrupted or for --duration, then prints its clients.

The first five activities fill a client's queues up to their load
whenever they run short, so the throttle sets the pace; terrain,
objects, avatars and textures are application-limited: each offers a
fixed mean, below, whatever the throttle (docs/opensim.md gives their
sources in OpenSim 0.9.2.2). Demand per client, bytes/s on the wire:

%s

--buckets opensim gives each client OpenSim's per-category token
buckets, which do not lend an idle category's rate to the busy ones, as
OpenSim 0.9.2.2 does; the default, fair, lets the busy categories share
it (package opensim's own scheduler). The default stays fair so that
existing set-ups keep their rates; runs that stand in for OpenSim should
say --buckets opensim.

--child-regions K (1 to 8) also opens K neighbour regions on the next K
ports (--listen's port + 1 ... + K: east, north, west, south, then the
corners), as fairgrid viewer --child-regions K expects. A viewer's
circuit to a neighbour is a child agent: it completes with
RegionHandshakeReply, and the neighbour applies the root's AgentThrottle
times OpenSim's factor max(0.2, 1 - 0.3 d^2/256^2) for the agent at
--position (default 128,128: 0.85 in every neighbour).

Against floods of UseCircuitCode from spoofed addresses, circuits that have
not completed the handshake are capped (--max-pending, --pending-timeout)
and each source /24 or /64 may open --circuit-burst circuits at once and
--circuit-rate a second; connected viewers are never refused.

With --stress each movement a viewer sends (fairgrid viewer --stress) is
echoed to the avatars within --view-distance; the world is not bounded to
one region, so the viewers' density sweep can spread them wider. Its
--metrics include the process's CPU time and the datagrams in and out,
which fairgrid viewer --sim-metrics reads for each sweep step.`

// ViewerSynopsis is fairgrid viewer's.
const ViewerSynopsis = `--sim ADDR [--clients N] [--duration D] [--throttle R] [--viewer-rule] [--ack-delay D] [--child-regions K] [--socks5 ADDR [--socks5-user U --socks5-pass P]] [--format text|json]
       fairgrid viewer --stress --sim ADDR [--clients N | --sweep N,N,...] [--duration D] [--neighbours K [--view-distance M]] [--sim-metrics URL] [--fleet auto|shared|per-viewer] [--format text|json]

Synthetic viewers: each logs in to the simulator with UseCircuitCode (no
XML-RPC against fairgrid sim), completes the handshake, streams AgentUpdate
at 10 Hz, acks, pings every 5 s and asks for its throttle with the viewer's
split (default 1,500 kbps of 1024 bit/s, the classic viewer), optionally
following the stock ±10 % rule. At the end each prints what it measured;
--format json gives one object per viewer.

With --child-regions K each viewer also opens a child circuit, from the
same socket, to each of K neighbour regions at --sim's port + 1 ... + K
(as fairgrid sim --child-regions K opens them) once its root circuit is
complete: UseCircuitCode, RegionHandshakeReply, acks and pings, but no
CompleteAgentMovement, AgentUpdate or AgentThrottle, as a real viewer's
child circuits (a neighbour takes its throttle from the root region).
It reports what each circuit received and the total. (Not --neighbours:
that is stress mode's neighbours per movement.) With --stress (against fairgrid
sim --stress) each viewer moves once a second and times the echo of its
movement; --sweep tries each viewer count in turn and reports the largest
whose mean delay stays under 100 ms. Each step reports, over its window
(after a 3 s warm-up): the mean neighbours each movement went to, the
datagrams per second in and out at the region and its CPU seconds (read
from fairgrid sim --metrics at --sim-metrics, for example
http://127.0.0.1:9104/metrics), the viewers' CPU seconds (this process),
and the mean and 99th-percentile echo delay. Without --neighbours the
viewers walk in one 256 m region, so the neighbours per move grow with
their number; --neighbours K spreads each step's viewers over a square
sized to give each movement K neighbours on average within
--view-distance (which must be the sim's).

Stress viewers run on one event loop per CPU. --fleet shared (the default
where it works: Linux, with the sim on IPv4 loopback) gives each viewer
its own address 127.x.y.z and serves all of a loop's viewers from one UDP
socket with IP_PKTINFO, read and written 64 and up to 1,024 datagrams a
system call; --fleet per-viewer gives each viewer its own socket, as
other platforms always do. auto uses shared and falls back to per-viewer,
saying why on stderr; the fleet column says which each step used.

With --socks5 each viewer sends and receives through a UDP association
with that SOCKS 5 proxy (fairgrid proxy, say), every datagram wrapped in
the 10-byte RFC 1928 header, as the Second Life viewer does with "Use
SOCKS 5 proxy for UDP traffic"; --socks5-user and --socks5-pass log in
to a proxy that asks (RFC 1929).`

// LinkSynopsis is fairgrid link's.
const LinkSynopsis = `--listen ADDR --upstream ADDR [--rate R] [--delay D] [--loss P] [--buffer N] [--burst L] [--seed S] [--duration D] [--format text|json]

Relays UDP between viewers and a simulator like a network link would:
per direction a rate limit, a FIFO buffer in datagrams, a one-way delay and
random or bursty loss, repeatable with a seed. Point viewers at --listen.
Each of --rate, --delay, --loss, --buffer and --burst takes one value for
both directions, or down=VALUE,up=VALUE (down is simulator to viewer).
Rates are bits/s with an optional k, M or G (2M, 500k); loss is a fraction
or a percentage (0.03, 3%). It runs until interrupted or for --duration and
then prints what it forwarded and dropped.`

// VersionSynopsis is fairgrid version's.
const VersionSynopsis = `(or fairgrid --version)

Prints the version, the commit it was built from ("(modified)" if the tree
had uncommitted changes), the Go toolchain and the platform, on one line.`

// LabFairnessSynopsis is fairgrid lab fairness's.
const LabFairnessSynopsis = `[--seats LIST] [--region opensim|fairgrid] [--neighbours K] [--limited WORKLOAD] [--controllers LIST] [--tcp LIST] [--reference LIST] [--seeds N] [--seed N] [--duration D] [--warmup D] [--interval D] [--design axes|centre|subset|cross] [--parallel N] [--format text|json] [--out DIR]

Measures the promise: a viewer with saturating demand (its region sends
whatever the throttle allows) beside bulk TCP downloads on one shared
drop-tail bottleneck, its bytes/s ÷ one TCP flow's, for each seat and
cell of the grid: TCP reno and cubic (gVisor's userspace stacks) and,
as root, linux-reno, linux-cubic and linux-bbr (the kernel's, in network
namespaces); 1 and 4 flows; buffers of 20, 100 and 200 packets and of ½,
1 and 2 bandwidth-delay products; random loss 0, 0.5, 3 and 10 %; RTT 20,
80 and 200 ms; links of 1, 6 and 30 Mbit/s. By default (--design axes)
each axis is varied alone around the centre, 6 Mbit/s, 80 ms, 100
packets, no loss, one flow (13 cells per controller and TCP); centre runs
the centre alone, subset the centre and its 3 % cell, cross the whole
cross product.
--seats (by default sidecar,proxy,gateway,gateway+sidecar,stock) puts
what users run in the viewer's seat of every cell: sidecar
(run's loop on the viewer's traffic, sending AgentThrottles), proxy (the
viewer's UDP through proxy's SOCKS 5 relay), gateway (a stock viewer
behind gateway), gateway+sidecar, stock (no fairgrid), each the
product's own code over real LLUDP against a region of fairgrid sim with
OpenSim's non-lending category buckets and its 50-unacked stall (or,
with --region fairgrid, fairgrid's own scheduler, whose idle categories
lend, and no stall), the viewer asking 5,120 kbit/s; and tcp:KIND, the
control. Their region's
demand saturates (flying); each seat also gets one application-limited
row (--limited, default terrain) at the centre with 3 % loss, to set
beside stock's: nothing cut when the link has room. --neighbours K adds
K child circuits (neighbour regions) to the viewer: their sum is its
share. --controllers (none by default) runs the rig's own viewer with a
controller alone instead (vtcp, window, tfrc): no LLUDP, no region, a
diagnostic of the controller, not what users run. It gives the sidecar
seat's rows against --region fairgrid, not against OpenSim's region,
whose stall holds every viewer (docs/results/seats-bare.md,
seats-subset.md). Naming either of --seats
and --controllers leaves the other empty unless it is named too.
--reference adds the control: each cell again with a bulk TCP download
of each kind listed in the viewer's seat (rows "tcp:KIND"), how far one
TCP flow's share lies from another's on the same rig.
Runs are real time (warm-up plus duration each), --parallel at once;
Ctrl-C prints the table of the runs that finished (exit 0).

Prints a markdown table (text) or one JSON row per cell (json); with
--out, also rows.json, table.md and figure.html (viewer ÷ TCP per cell,
one panel per seat) in DIR.`

// LabGatewaySynopsis is fairgrid lab gateway's.
const LabGatewaySynopsis = `[--warmup D] [--duration D] [--seed N] [--controller C] [--interval D] [--loss P] [--arms LIST] [--format text|json]

The gateway in the demo's setting, on lab fairness's rig: a link of 1
Mbit/s, 50 ms one way and a 100-datagram buffer, each way, 1 % random
loss towards the viewer, shared by a bulk CUBIC download (gVisor's
userspace TCP) and a stock viewer asking 1,500 kbit/s (the lab viewer:
nothing of fairgrid at it). A copy of the link per arm, all at once:
"gateway", the viewer reaches the region (fairgrid sim's) through
fairgrid gateway at the region's side of the link; "gateway+sidecar",
the same with fairgrid's client side at the viewer as well; "stock", the
viewer reaches the region directly. For each: the
download's rate and share and the viewer's received rate (both on the
wire: one TCP share is viewer ÷ download 0.8–1.25), and the viewer's
datagrams' queueing delay in the link's buffer; for the gateway, its own
queueing delay by channel, fair rate, loss event rate and RTT, and how
much the rate in force moved. Real time: warm-up plus duration.`

// LabRenderSynopsis is fairgrid lab render's.
const LabRenderSynopsis = `DIR|FILE [--format text|json|markdown]

Prints a saved run of the lab again, from the results "fairgrid lab
SCENARIO --out DIR" wrote (DIR/all.json, or the file named), with this
build's comparisons and verdicts and without running anything: the
output is what the run's own command would have printed with --format,
headed by that command (docs/lab.md is "lab render DIR" of its run).`
