// Baseline for BenchmarkDecodeRealValues (make bench-js): decodes the same
// real datagrams with node-metaverse's Packet.readFromBuffer, a widely used
// JavaScript LLUDP implementation, and prints nanoseconds per datagram.
// Like DecodeRealValues it decodes every field of every block into values
// (numbers, UUID and vector objects, Buffer slices of the datagram for
// Variable fields, copying nothing); it also allocates a Packet and a
// message object per datagram, where the Go side reuses its storage.
// Usage: node node-metaverse-bench.js NODE_METAVERSE_PACKAGE_DIR SHARED_REAL_DIR
const fs = require('fs');
const path = require('path');
const { Packet } = require(path.resolve(process.argv[2], 'dist/lib/classes/Packet'));
const dir = process.argv[3];
const datagrams = [];
for (const line of fs.readFileSync(path.join(dir, 'MANIFEST.tsv'), 'utf8').split('\n')) {
  if (!line || line.startsWith('#') || line.startsWith('path\t')) continue;
  datagrams.push(fs.readFileSync(path.join(dir, line.split('\t')[0])));
}
for (const line of fs.readFileSync(path.join(dir, 'vectors/pyogp-hippolyzer-packets.tsv'), 'utf8').split('\n')) {
  if (!line || line.startsWith('#') || line.startsWith('id\t')) continue;
  datagrams.push(Buffer.from(line.split('\t')[1], 'hex'));
}
const noop = () => {};
const warn = console.error;
console.error = noop; // it warns about trailing bytes in one vector
function decodeAll(n) {
  for (let i = 0; i < n; i++) new Packet().readFromBuffer(datagrams[i % datagrams.length], 0, noop, noop);
}
decodeAll(200000); // let the JIT settle
const n = 2000000;
const t0 = process.hrtime.bigint();
decodeAll(n);
const ns = Number(process.hrtime.bigint() - t0) / n;
console.error = warn;
console.log(`node-metaverse Packet.readFromBuffer: ${datagrams.length} real datagrams, ${ns.toFixed(0)} ns/datagram, ${Math.round(1e9 / ns)} datagrams/s`);
