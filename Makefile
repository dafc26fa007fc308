# fairgrid: TCP-fair congestion control for Second Life and OpenSim.
# Set-up: `make demo` runs the main job on an embedded default; `make test`
# runs every check CI runs.

GO       ?= go
PKGS     := ./...
# Compiled packages do not depend on where the checkout is, so a fresh
# clone (CI's) reuses the build cache of every earlier build of the same
# sources instead of compiling the module again for each of race, fuzz
# and cross builds. Nothing here reads a source path at run time.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# go test -race needs cgo and a C compiler: use it when one is present.
RACE     := $(shell command -v cc >/dev/null 2>&1 && echo -race)
# Fuzz smoke runs in `make test`; `make fuzz` runs longer. Each new
# interesting input is minimised for up to FUZZMINIMIZE (Go's default, 60 s,
# would spend a short run minimising, as a 3 KB config file showed). The
# smoke run counts executions rather than seconds: a time limit can end in
# a spurious "context deadline exceeded" with no failing input, a race in
# Go 1.26's fuzz coordinator (golang/go#75804, fixed in 1.27) that failed
# CI once here (FuzzUDPHeader).
FUZZTIME ?= 5000x
FUZZMINIMIZE ?= 1s
# Targets whose one execution costs milliseconds (a whole audit, a TOML
# file, the reference scheduler beside the fast one: 14-33 s at FUZZTIME)
# run FUZZSLOW executions in the smoke run; `make fuzz` gives them a
# minute as every other.
FUZZSLOW ?= 2000x
# Fuzz targets run FUZZ_P at a time: each spends much of its run building
# and starting its instrumented binary rather than fuzzing.
FUZZ_P ?= 2
# Packages that may import only the standard library (G1 of the style guide),
# and opensim, which may add only lludp and ratecalc.
LEAVES   := lludp ratecalc
# The module: no package outside internal/ and cmd/ may import internal/.
MODULE   := github.com/fairgrid/fairgrid
# Packages that must never read the clock: every event carries its time.
NOCLOCK  := lludp ratecalc opensim

.PHONY: all build demo test check cross dist interop-deps unit scale fuzz-smoke fuzz bench bench-js bench-capture bench-proxy bench-sim bench-daemon bench-audit bench-kernel bench-gateway lint check-deps generate cover clean acceptance-opensim \
	results results-jq results-gateway-lab results-demo results-demo-sample results-fairness-centre results-bench-gateway results-bench-controllers results-fairness-grid results-fairness-control \
	results-seats-subset results-bench-codec results-bench-opensim results-bench-lab results-bench-proxy results-bench-capture \
	results-bench-audit results-bench-daemon results-bench-kernel results-bench-js results-bench-sim results-controllers-sim results-demand \
	results-seats-bare results-seats-grid results-seats-grid-fairgrid results-seats-centre-fairgrid

all: build

build:
	CGO_ENABLED=0 $(GO) build -o bin/fairgrid ./cmd/fairgrid

demo:
	$(GO) run ./cmd/fairgrid run --demo

test: lint cross interop-deps unit scale fuzz-smoke

# Every package and its tests compile for Windows and macOS.
cross:
	GO=$(GO) internal/dist/crosscheck.sh

# Release binaries for linux, windows and darwin on amd64 and arm64, stamped
# with `git describe` and the commit, with SHA256SUMS, in dist/.
dist:
	GO=$(GO) internal/dist/dist.sh dist

# Clients nobody here wrote, for the SOCKS5 interoperability tests: curl and
# PySocks (Debian's python3-socks, for /usr/bin/python3). Installed when
# missing and apt-get can run; otherwise those tests skip and say why.
interop-deps:
	@command -v curl >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && apt-get install -y -qq curl >/dev/null) || echo "curl missing: its interop tests will skip"; }
	@/usr/bin/python3 -c 'import socks' 2>/dev/null || { command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && apt-get install -y -qq python3-socks >/dev/null) || echo "python3-socks missing: its interop tests will skip"; }

# Packages whose tests run real time on loopback and judge what they
# measure (end-to-end runs, the lab's rigs, the golden traces, live
# capture). They wait on the clock far more than they compute (their CPU
# time is a fraction of their wall time: docs/development.md), so they run
# REALTIME_P at a time (the lab's LAB_P at a time), after the packages
# that compute (two at a time) have left the cores to them. The lab's
# scenarios and the demo (a viewer beside gVisor's TCP, timed against the
# real clock) run in the scale step: under the race detector real TCP runs
# slower than real time, starves the control loop beside it, and their
# figures cannot be judged (a CI run saw a re-assertion held 4.7 s). Set
# REALTIME_P=1 LAB_P=1 to see whether a failure comes from sharing the
# machine.
REALTIME_P ?= 3
LAB_P ?= 5
REALTIME_LAB := ./internal/lab/scenario ./internal/lab/demo ./internal/lab/fairness ./internal/lab/gatewaylab ./internal/lab/demand
# Of those, the ones whose checks are finest run alone: the golden traces
# (loss events grouped by RTT: 62 against the viewer's 55 at 10 % when
# run three at a time under load 4.6) and two kernel TCP flows' share
# (Jain 0.900 then, against at least 0.90).
REALTIME_ALONE := ./internal/audit ./internal/lab/kerneltcp
REALTIME := ./cmd/fairgrid ./throttle/proxy/socks5 ./internal/benchrelay \
	./internal/lab/link ./internal/lab/tcpflow ./internal/lab/viewer ./opensim/region ./opensim/gateway ./throttle ./throttle/proxy ./capture
# Run without the race detector (scale), which would measure itself.
SCALE_ONLY := TestDecodeFloodCapture|TestFloodKeepsViewer
# cmd/fairgrid's end-to-end runs (each waits out its own clock: 11-32 s;
# throttle/proxy's TestProxyEndToEnd, 30 s, runs with its package)
# run in a process of their own beside the rest of its tests, the longest
# package's, so that the two halves overlap.
CMD_CLOCKED := TestRunDaemonLive|TestReadmeRunnable|TestLabInterrupted|TestLabFairnessInterrupted|TestDemoLosslessComparison
unit:
	$(GO) test $(RACE) -count=1 -p 2 $$($(GO) list $(PKGS) | grep -v $(foreach p,$(REALTIME_ALONE) $(REALTIME) $(REALTIME_LAB),-e '$(patsubst ./%,/%,$(p))$$'))
	$(GO) test $(RACE) -count=1 -p 1 $(REALTIME_ALONE)
	@$(GO) test $(RACE) -count=1 -run '^($(CMD_CLOCKED))$$' ./cmd/fairgrid & clocked=$$!; \
		$(GO) test $(RACE) -count=1 -p $(REALTIME_P) -skip '^($(SCALE_ONLY)|$(CMD_CLOCKED))$$' $(REALTIME); rest=$$?; \
		wait $$clocked; clocked=$$?; [ $$rest = 0 ] && [ $$clocked = 0 ]

# Scale tests run without the race detector, which would measure itself.
# Those that load the cores (a thousand viewers, floods) run one at a
# time; then gVisor's flows and the lab's packages, which mostly wait,
# run side by side.
scale:
	$(GO) test -count=1 -run 'TestThousandViewers|TestStress' ./internal/lab/viewer
	$(GO) test -count=1 -run 'TestSimFlood$$|$(SCALE_ONLY)' ./cmd/fairgrid
	$(GO) test -count=1 -run 'TestFloodKeepsViewer$$' ./throttle/proxy/socks5
	$(GO) test -count=1 -run 'TestBadInput$$|TestSpoofedLockout|TestAckFlood|TestEstimatorGroundTruth|TestStockViewerGetsFairRate|TestClientSideBehindGateway|TestChannelBoundOnSockets' ./opensim/gateway
	@$(GO) test -count=1 -run 'TestSingleFlowFillsBottleneck|TestTwoFlowsShare|TestViewerBesideTCP|TestReceiveBufferLimitsFlow' ./internal/lab/tcpflow & flows=$$!; \
		$(GO) test -count=1 -p $(LAB_P) $(REALTIME_LAB); lab=$$?; \
		wait $$flows; flows=$$?; [ $$lab = 0 ] && [ $$flows = 0 ]

# The quick loop while working: format, vet, and the unit tests with
# -short (no browser, no built binaries, no long end-to-end runs), without
# the race detector and the lab's real-time scenarios.
check:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -short -count=1 $$($(GO) list $(PKGS) | grep -v $(foreach p,$(REALTIME_LAB),-e '$(patsubst ./%,/%,$(p))$$'))

# Each fuzz target briefly, seeded from the real datagrams: package:target.
FUZZ_TARGETS := lludp:FuzzDecode lludp:FuzzZeroCode lludp:FuzzReplaceThrottles lludp:FuzzPeekZeroCoded lludp:FuzzParseTemplate \
	capture:FuzzUDPFrame capture:FuzzReader throttle/circuit:FuzzObserve throttle/circuit:FuzzFastBody \
	opensim:FuzzScheduler opensim:FuzzSchedulerReference:$(FUZZSLOW) configs:FuzzParse:$(FUZZSLOW) \
	ratecalc:FuzzParseBitRate ratecalc:FuzzParseLoss \
	throttle/proxy/socks5:FuzzHandshake throttle/proxy/socks5:FuzzUDPHeader \
	internal/audit:FuzzAudit:$(FUZZSLOW) internal/lab/tcpflow:FuzzClientPort internal/lab/kerneltcp:FuzzTCPPorts \
	internal/lab/viewer:FuzzPktinfoDst internal/lab/tcm:FuzzSplitBundle internal/lab/tcm:FuzzHeaderCompression \
	opensim/gateway:FuzzCore
fuzz-smoke:
	@printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_P) -I{} sh -c '\
		pt={}; p=$${pt%%:*}; t=$${pt#*:}; n=$(FUZZTIME); \
		case "$$t" in *:*) n=$${t#*:}; t=$${t%%:*};; esac; \
		out=$$($(GO) test -run "^$$" -fuzz "^$$t\$$" -fuzztime $$n -fuzzminimizetime $(FUZZMINIMIZE) ./$$p 2>&1); rc=$$?; \
		case "$$out" in *"no fuzz tests to fuzz"*) rc=1;; esac; \
		echo "fuzz $$p $$t ($$n): $$(echo "$$out" | tail -1)"; \
		[ $$rc = 0 ] || { echo "$$out"; exit 255; }'

fuzz:
	$(MAKE) fuzz-smoke FUZZTIME=60s FUZZSLOW=60s

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The decoder against node-metaverse (npm), on the same real datagrams in the
# same run. Its GitHub-only dependency cannot be installed here, so the
# package is unpacked and only what its packet classes need is installed.
NODE_METAVERSE := @caspertech/node-metaverse@0.8.16
bench-js:
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && cd "$$dir" && \
		npm pack --silent $(NODE_METAVERSE) >/dev/null && tar xzf *.tgz && \
		npm install --silent --no-audit --no-fund ipaddr.js@2 validator@13 long@4 uuid@14 >/dev/null && \
		node $(CURDIR)/lludp/testdata/node-metaverse-bench.js "$$dir/package" $(CURDIR)/../shared/testdata/real
	$(GO) test -run '^$$' -bench 'DecodeReal' -benchmem ./lludp

# fairgrid proxy relaying LLUDP (measurement and AgentThrottle rewrite)
# beside a plain Go UDP relay of the same shape and socat's (Debian's
# package, installed when missing), each in its own process, same run.
bench-proxy:
	@command -v socat >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && apt-get install -y -qq socat >/dev/null) || echo "socat missing: no socat figures"; }
	$(GO) test -run '^$$' -bench 'BenchmarkProxy' -benchtime 2s -count 3 ./cmd/fairgrid

# Reading and measuring a large capture against tcpdump reading it; tcpdump
# comes from Debian's package when it is missing.
bench-capture: build
	@command -v tcpdump >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tcpdump >/dev/null; }
	capture/capturetest/bench-capture.sh bin/fairgrid 2000000

# Stress mode (issue #15): region and viewers as two processes on this
# machine; each step reports neighbours per move, the region's datagrams/s
# and CPU (from its metrics), the viewers' CPU and the echo delays.
# NEIGHBOURS: per-move neighbours the world is sized for (0: one 256 m region).
SWEEP ?= 1000,2000,3000,4000,5530,7000
NEIGHBOURS ?= 8 32
# FLEET: auto (shared sockets on 127/8 where possible) or per-viewer, the
# socket-per-viewer fleet, for before/after with one binary.
FLEET ?= auto
bench-sim: build
	@ulimit -n 65536 2>/dev/null || true; \
	bin/fairgrid sim --listen 127.0.0.1:9500 --metrics 127.0.0.1:9501 --activity idle --stress \
		--circuit-burst 20000 --max-pending 16384 >/dev/null 2>&1 & sim=$$!; \
	trap 'kill $$sim 2>/dev/null; wait $$sim 2>/dev/null' EXIT; \
	for k in $(NEIGHBOURS); do echo "$$k neighbours per move:"; \
		bin/fairgrid viewer --sim 127.0.0.1:9500 --sim-metrics http://127.0.0.1:9501/metrics \
			--stress --sweep $(SWEEP) --neighbours $$k --fleet $(FLEET) --duration 10s || exit 1; done

# The audit on a large real-traffic capture (the 0.9.2.2 capture repeated
# to 2 M datagrams) against tcpdump reading the same file, one core each;
# peak RSS at 1x and 10x; what --html adds.
bench-audit: build
	@command -v tcpdump >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq tcpdump >/dev/null; }
	internal/audit/bench-audit.sh bin/fairgrid 2000000

# The lab's forwarder between Linux TCP in namespaces and the userspace
# bottleneck (root), against loopback in the same run.
bench-kernel:
	$(GO) test -run '^$$' -bench Forwarder -benchtime 2s -count 3 ./internal/lab/kerneltcp

# The daemon's CPU and memory at about 5 Mbit/s of viewer traffic (needs
# root or CAP_NET_RAW: it captures lo).
bench-daemon: build
	internal/lab/demo/bench-daemon.sh bin/fairgrid 30

# fairgrid gateway with 1,000 viewers, the scheduler and the estimators on
# every datagram, beside a plain Go UDP relay of the same shape, each in a
# child process, same run: datagrams per CPU-second, the added median
# round trip, memory per viewer (docs/gateway.md).
bench-gateway:
	$(GO) test -run '^$$' -bench 'BenchmarkGateway' -benchtime 1x -count 3 ./opensim/gateway

# Generated results (docs/results/): each file is a command's output under
# a header giving the command, its date and the machine (.ci/results.sh).
# The docs keep the method and link to these for the figures. `make
# results` runs the quick ones (real time, a few minutes each, one after
# another: run it on a quiet machine, the load is recorded); the fairness
# grid and its control take hours and have targets of their own.
RESULTS := .ci/results.sh
RESULT_SEEDS ?= 1 2 3
results: results-gateway-lab results-demo results-demo-sample results-fairness-centre results-seats-subset results-bench-gateway results-bench-controllers \
	results-bench-codec results-bench-opensim results-bench-lab results-bench-proxy results-bench-capture results-bench-audit \
	results-controllers-sim results-demand results-seats-bare

results-jq:
	@command -v jq >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

# `fairgrid lab gateway` (the demo's link; the gateway, gateway+sidecar and
# stock arms at once), one run per seed: about a minute each.
results-gateway-lab: build results-jq
	RESULTS_TARGET=$@ RESULTS_CMD='for s in $(RESULT_SEEDS); do bin/fairgrid lab gateway --seed $$s --format json | jq -rf .ci/results/gateway-lab.jq; done' \
	$(RESULTS) docs/results/gateway-lab.md "fairgrid lab gateway: the demo's link, each arm, one run per seed" sh -c '\
		echo "| seed | arm | download (kbit/s) | viewer (kbit/s) | viewer ÷ download | viewer queueing, mean (p95) ms | gateway fair (kbit/s) | rate in force (kbit/s) | gateway loss event rate | gateway RTT (ms) |"; \
		echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"; \
		for s in $(RESULT_SEEDS); do bin/fairgrid lab gateway --seed $$s --format json | jq -rf .ci/results/gateway-lab.jq || exit 1; done'

# The default demo (`fairgrid run --demo`, 60 s), once per seed slot: the
# demo has no seed, so the runs differ by the machine's timing alone.
results-demo: build results-jq
	RESULTS_TARGET=$@ RESULTS_CMD='for run in $(RESULT_SEEDS); do bin/fairgrid run --demo --format json | jq -rsf .ci/results/demo.jq; done' \
	$(RESULTS) docs/results/demo.md "fairgrid run --demo: the default demo, one row per side and run" sh -c '\
		echo "| run | side | download (kbit/s) | viewer (kbit/s) | viewer ÷ download | viewer queueing, mean (p95) ms | download ÷ beside the stock viewer | fairgrid: requests, re-assertions |"; \
		echo "|---|---|---:|---:|---:|---:|---:|---|"; \
		for r in $(RESULT_SEEDS); do bin/fairgrid run --demo --format json | jq -rs --arg run $$r -f .ci/results/demo.jq || exit 1; done'

# One default demo as it prints (the README and docs/demo.md show it).
results-demo-sample: build
	RESULTS_TARGET=$@ FENCE=1 $(RESULTS) docs/results/demo-sample.md "fairgrid run --demo: one default run, as printed" bin/fairgrid run --demo

# The grid's centre cell beside the three TCPs, two seeds: about 4 minutes.
FAIRNESS_CENTRE := bin/fairgrid lab fairness --controllers vtcp --tcp cubic,linux-cubic,linux-reno --design centre --seeds 2 --warmup 60s --duration 40s --parallel 3
results-fairness-centre: build
	RESULTS_TARGET=$@ $(RESULTS) docs/results/fairness-centre.md "fairgrid lab fairness: vtcp at the grid's centre" $(FAIRNESS_CENTRE)

# The product's seats at the grid's centre and its 3 % cell, with the
# terrain rows, the controller alone and the control: about 8 minutes.
SEATS_SUBSET := bin/fairgrid lab fairness --seats sidecar,proxy,gateway,gateway+sidecar,stock,tcp:cubic --controllers vtcp --tcp cubic --design subset --seeds 3 --parallel 12
results-seats-subset: build
	RESULTS_TARGET=$@ $(RESULTS) docs/results/seats-subset.md "fairgrid lab fairness: the product's seats at the centre and its 3 % cell" $(SEATS_SUBSET)

# The controller alone (the rig's own viewer, no LLUDP) beside the
# sidecar's seat against fairgrid's own region (no stall, lending
# buckets), at the centre and its 3 % cell: do they give the same rows?
# About 5 minutes.
# Every product seat at the grid's centre against fairgrid's region (its
# scheduler, no 50-unacked stall), where the region can send more than
# one share: what the seats do there when OpenSim's stall does not hold
# every viewer. 15 runs, 8 at once: about 5 minutes.
SEATS_CENTRE_FAIRGRID := bin/fairgrid lab fairness --seats sidecar,proxy,gateway,gateway+sidecar,stock --region fairgrid --controllers vtcp --tcp cubic --design centre --limited "" --seeds 3 --parallel 8
results-seats-centre-fairgrid: build
	RESULTS_TARGET=$@ RESULTS_CMD='$(SEATS_CENTRE_FAIRGRID)' $(RESULTS) docs/results/seats-centre-fairgrid.md "fairgrid lab fairness: the product's seats at the centre, fairgrid's region" $(SEATS_CENTRE_FAIRGRID)

SEATS_BARE := bin/fairgrid lab fairness --seats sidecar,tcp:cubic --region fairgrid --controllers vtcp --tcp cubic --design subset --limited "" --seeds 6 --parallel 12
results-seats-bare: build
	RESULTS_TARGET=$@ RESULTS_CMD='$(SEATS_BARE)' $(RESULTS) docs/results/seats-bare.md "fairgrid lab fairness: the controller alone beside the sidecar's seat, fairgrid's region" $(SEATS_BARE)

# The product's seats over the grid's axes (13 cells beside gVisor's
# CUBIC, one seed), OpenSim's region, with the controller alone and the
# control: per seat, the cells within the band and the mean |ln|, then
# each cell, then the full table. About 12 minutes on 2 cores; the run's
# rows.json, table.md and figure.html stay in SEATS_GRID_OUT.
SEATS_GRID_OUT ?= /tmp/fairgrid-seats-grid
SEATS_GRID := bin/fairgrid lab fairness --seats sidecar,proxy,gateway,gateway+sidecar,stock,tcp:cubic --controllers vtcp --tcp cubic --design axes --seeds 1 --parallel 12 --out $(SEATS_GRID_OUT)
results-seats-grid: build results-jq
	RESULTS_TARGET=$@ RESULTS_CMD='$(SEATS_GRID)' \
	$(RESULTS) docs/results/seats-grid.md "fairgrid lab fairness: the product's seats over the grid's axes" sh -c '\
		$(SEATS_GRID) >/dev/null && jq -rsf .ci/results/seats-grid.jq $(SEATS_GRID_OUT)/rows.json && \
		printf "\nThe full table:\n\n" && cat $(SEATS_GRID_OUT)/table.md'

# The same product seats over the same cells against fairgrid's own
# region (no stall, lending buckets): which of the misses above are the
# region's. About 9 minutes.
SEATS_GRID_FAIRGRID_OUT ?= /tmp/fairgrid-seats-grid-fairgrid
SEATS_GRID_FAIRGRID := bin/fairgrid lab fairness --seats sidecar,proxy,gateway,gateway+sidecar,stock --region fairgrid --tcp cubic --design axes --limited "" --seeds 1 --parallel 12 --out $(SEATS_GRID_FAIRGRID_OUT)
results-seats-grid-fairgrid: build results-jq
	RESULTS_TARGET=$@ RESULTS_CMD='$(SEATS_GRID_FAIRGRID)' \
	$(RESULTS) docs/results/seats-grid-fairgrid.md "fairgrid lab fairness: the product's seats over the grid's axes, fairgrid's region" sh -c '\
		$(SEATS_GRID_FAIRGRID) >/dev/null && jq -rsf .ci/results/seats-grid.jq $(SEATS_GRID_FAIRGRID_OUT)/rows.json && \
		printf "\nThe full table:\n\n" && cat $(SEATS_GRID_FAIRGRID_OUT)/table.md'

# `make bench-gateway`'s benchmark, as a table.
results-bench-gateway:
	RESULTS_TARGET=$@ BENCH=1 $(RESULTS) docs/results/bench-gateway.md "make bench-gateway: the gateway beside a plain Go UDP relay" \
		$(GO) test -run '^$$' -bench 'BenchmarkGateway' -benchtime 1x -count 3 ./opensim/gateway

# The controllers' cost per datagram, each beside the others in the same
# run: on the real capture, on synthetic datagrams, and alone (seconds).
results-bench-controllers:
	RESULTS_TARGET=$@ BENCH=1 $(RESULTS) docs/results/bench-controllers.md "the controllers' cost per datagram, in one run" \
		$(GO) test -run '^$$' -bench 'BenchmarkObserveController|BenchmarkUpdate' -benchmem -count 3 ./throttle/circuit ./ratecalc

# The speed tables (docs/speed.md, docs/testbed.md). Each runs a bench
# target or a benchmark as it is and keeps its output: what counts in each
# is the ratio to the baseline measured in the same run (tcpdump, a plain
# relay, socat, a memory miss, loopback), never a time alone. Run them one
# at a time on a quiet machine; the header records the load.
# The codec, the capture reader, the tracker, decode's JSON and the
# controllers' equations, each against the others in one run (seconds).
results-bench-codec:
	RESULTS_TARGET=$@ BENCH=1 $(RESULTS) docs/results/bench-codec.md "the codec, the reader, the tracker and the equations, in one run" \
		$(GO) test -run '^$$' -bench . -benchmem -count 3 ./lludp ./capture ./throttle/circuit ./internal/decode ./ratecalc

# The opensim scheduler per packet beside one miss to memory (its
# baseline, BenchmarkMemoryLatency), at 100 and 10,000 clients. Not
# BenchmarkEnqueueNextChannelBuckets: its own throughput check fails at
# some b.N (more sent than taken in, or under 9/10 of it), which would
# leave no table.
results-bench-opensim:
	RESULTS_TARGET=$@ BENCH=1 $(RESULTS) docs/results/bench-opensim.md "the opensim scheduler beside one memory miss, in one run" \
		$(GO) test -run '^$$' -bench '^Benchmark(EnqueueNext|MemoryLatency|ClientLifecycle)$$' -benchmem -count 3 ./opensim

# The lab's bottleneck beside a plain channel hand-off (one core), and
# gVisor's TCP through it beside kernel loopback TCP.
results-bench-lab:
	RESULTS_TARGET=$@ BENCH=1 $(RESULTS) docs/results/bench-lab.md "the lab's bottleneck and gVisor's TCP beside their baselines, in one run" \
		$(GO) test -run '^$$' -bench . -benchmem -cpu 1 -count 3 ./internal/lab/link ./internal/lab/tcpflow

# `make bench-proxy`, `bench-capture`, `bench-audit`, `bench-daemon` (root),
# `bench-kernel` (root), `bench-js` (npm) and `bench-sim` (stress, about 2
# minutes of both cores) as tables: the bench target's own output.
BENCH_TABLE = RESULTS_TARGET=$@ RESULTS_CMD='make $(1)' $(RESULTS) docs/results/$(1).md "make $(1): $(2)" $(MAKE) -s --no-print-directory $(1)
results-bench-proxy:
	BENCH=1 $(call BENCH_TABLE,bench-proxy,fairgrid proxy beside a plain Go relay and socat)
results-bench-capture:
	FENCE=1 $(call BENCH_TABLE,bench-capture,fairgrid decode --summary beside tcpdump)
results-bench-audit:
	FENCE=1 $(call BENCH_TABLE,bench-audit,fairgrid audit beside tcpdump)
results-bench-daemon:
	FENCE=1 $(call BENCH_TABLE,bench-daemon,the sidecar daemon's CPU and memory at 5 Mbit/s)
results-bench-kernel:
	BENCH=1 $(call BENCH_TABLE,bench-kernel,the lab's TUN forwarder beside loopback)
results-bench-js:
	FENCE=1 $(call BENCH_TABLE,bench-js,the decoder beside node-metaverse)
results-bench-sim:
	FENCE=1 $(call BENCH_TABLE,bench-sim,stress mode's sweep)

# The controllers on ratecalc's simulated link and the loop on category
# buckets (virtual time, seeded: the same figures on any machine), as
# their tests log them (seconds).
results-controllers-sim:
	RESULTS_TARGET=$@ FENCE=1 $(RESULTS) docs/results/controllers-sim.md "the controllers on ratecalc's simulated link, as the tests log it" \
		bash -o pipefail -c '$(GO) test -count=1 -v -run "^(TestSteadyState|TestConvergence|TestViewerBaseline|TestVirtualTCPApplicationLimitedNoCollapse|TestNoCollapseOnCategoryBuckets|TestLoopViewerCircuitsShareOne)$$" ./ratecalc ./throttle | grep -E "^ *--- |_test.go:[0-9]+: "'

# The product's front-ends on fairgrid sim's OpenSim-like region with
# less to send than one share: what the viewer receives over the stock
# viewer's, as TestNeverSlowerWithRoom logs it (real time, about a minute).
results-demand:
	RESULTS_TARGET=$@ FENCE=1 $(RESULTS) docs/results/demand.md "the front-ends on an application-limited region, beside the stock viewer" \
		bash -o pipefail -c '$(GO) test -count=1 -v -run "^TestNeverSlowerWithRoom$$" ./internal/lab/demand | grep -E "^ *--- |_test.go:[0-9]+: "'

# The whole grid (39 cells beside gVisor's CUBIC, Linux's CUBIC and
# Linux's reno; root), four seeds: 156 runs of 100 s, six at a time, about
# 45 minutes of a quiet machine.
FAIRNESS_GRID := bin/fairgrid lab fairness --controllers vtcp --tcp cubic,linux-cubic,linux-reno --seeds 4 --warmup 60s --duration 40s --parallel 6
results-fairness-grid: build
	RESULTS_TARGET=$@ $(RESULTS) docs/results/fairness-grid.md "fairgrid lab fairness: vtcp over the grid" $(FAIRNESS_GRID)

# The control: a real TCP flow of each kind in the viewer's seat over the
# same grid, two seeds: 234 runs of 100 s, six at a time, about 65 minutes.
FAIRNESS_CONTROL := bin/fairgrid lab fairness --controllers "" --reference cubic,linux-cubic,linux-reno --tcp cubic,linux-cubic,linux-reno --seeds 2 --warmup 60s --duration 40s --parallel 6
results-fairness-control: build
	RESULTS_TARGET=$@ $(RESULTS) docs/results/fairness-control.md "fairgrid lab fairness --reference: TCP beside TCP" $(FAIRNESS_CONTROL)

# Acceptance against a real OpenSim 0.9.2.2 and two libopenmetaverse
# TestClients (root; not part of `make test`): OPENSIM_DIR is OpenSim's
# built bin/, TESTCLIENT its TestClient.exe; without them it says why and
# skips (before building bin/fairgrid). ACCEPTANCE_OUT=docs/results/
# acceptance-opensim.md keeps the table; docs/opensim.md.
acceptance-opensim:
	GO=$(GO) internal/acceptance/opensim/run.sh

# Unused code, simplifications and bugs vet does not look for; a tool run
# from the module proxy, not a dependency of the module.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: check-deps
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	@for p in $(NOCLOCK); do \
		[ -d $$p ] || continue; \
		if grep -nE 'time\.(Now|Since|Until|Sleep|Tick|NewTimer|NewTicker|After)\(' $$(ls $$p/*.go 2>/dev/null | grep -v _test.go) /dev/null; then \
			echo "$$p reads the clock: every event must carry its time"; exit 1; fi; \
	done

check-deps:
	@for p in $(LEAVES); do \
		ls $$p/*.go >/dev/null 2>&1 || continue; \
		bad=$$($(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./$$p | grep -v "^github.com/fairgrid/fairgrid/$$p$$"); \
		if [ -n "$$bad" ]; then echo "$$p must import only the standard library, imports: $$bad"; exit 1; fi; \
	done
	@if ls opensim/*.go >/dev/null 2>&1; then \
		bad=$$($(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./opensim | grep -vE '^github.com/fairgrid/fairgrid/(opensim|lludp|ratecalc)$$'); \
		if [ -n "$$bad" ]; then echo "opensim may add only lludp and ratecalc, imports: $$bad"; exit 1; fi; \
	fi
	@for p in internal/lab/viewer internal/lab/link; do \
		bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./$$p | grep gopacket); \
		if [ -n "$$bad" ]; then echo "$$p is a test rig: it measures without the capture stack, imports: $$bad"; exit 1; fi; \
	done
	@bad=$$($(GO) list -f '{{$$p := .ImportPath}}{{range .Imports}}{{$$p}} -> {{.}}{{"\n"}}{{end}}' ./... | \
		grep -E '^$(MODULE)/[^ ]+ -> $(MODULE)/internal(/|$$)' | grep -vE '^$(MODULE)/(internal|cmd)(/| )'); \
		if [ -n "$$bad" ]; then echo "a public package imports an internal one (make the leaf public, or move it):"; echo "$$bad"; exit 1; fi
	@bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./throttle | grep -E 'gopacket|prometheus|^$(MODULE)/(capture|opensim)(/|$$)'); \
		if [ -n "$$bad" ]; then echo "throttle is the control core: no capture, Prometheus or scheduler, imports: $$bad"; exit 1; fi
	@bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./throttle/circuit | grep -E 'gopacket|^$(MODULE)/(capture|opensim)(/|$$)'); \
		if [ -n "$$bad" ]; then echo "throttle/circuit measures from lludp's datagrams and channels, imports: $$bad"; exit 1; fi
	@bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./opensim/... | grep -E 'gopacket|^$(MODULE)/capture(/|$$)'); \
		if [ -n "$$bad" ]; then echo "opensim needs no capture code, imports: $$bad"; exit 1; fi

generate:
	$(GO) generate ./lludp

cover:
	$(GO) test -coverprofile=cover.out $(PKGS) && $(GO) tool cover -func=cover.out | tail -1

clean:
	rm -rf bin dist cover.out
