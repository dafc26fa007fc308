// Package throttle turns a target rate into the AgentThrottle a simulator
// receives. ViewerSplit shapes a total the way the Second Life viewer does,
// so requests look like those simulators already get. The per-circuit
// control loop that decides the target every interval and sends it arrives
// with the sidecar daemon (issue 7).
package throttle
