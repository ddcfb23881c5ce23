// onnxruntime as the judge of mutated models (tests/fuzz/mutate.py): one long-lived process
// that reads one JSON request per line on stdin,
//   {"model": "m.onnx", "inputs": {"x": "x.npy", ...}, "out_dir": "dir"}
// loads the model (onnxruntime's own validation: checker, type and shape inference), runs
// it on the inputs and writes output k as out_dir/out_<k>.npy (by position: graph output
// names of a hostile model are not file names). It answers one JSON line per request:
//   {"status": "ok", "outputs": N} or {"status": "reject", "stage": "load"|"run", "error": "..."}
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { ort, readNpy, writeNpy } = require('../ort/ort_run.js');

const rl = readline.createInterface({ input: process.stdin });
const queue = [];
let busy = false;

async function handle(line) {
  const req = JSON.parse(line);
  let session;
  try {
    session = await ort.InferenceSession.create(req.model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  } catch (e) {
    return { status: 'reject', stage: 'load', error: String(e.message).slice(0, 400) };
  }
  try {
    const feeds = {};
    for (const [name, file] of Object.entries(req.inputs)) feeds[name] = readNpy(file);
    const results = await session.run(feeds);
    fs.mkdirSync(req.out_dir, { recursive: true });
    session.outputNames.forEach((name, k) => {
      try {
        writeNpy(path.join(req.out_dir, `out_${k}.npy`), results[name]);
      } catch (e) {
        // An output type the .npy writer does not know (bool, double): nothing to compare.
      }
    });
    return { status: 'ok', outputs: session.outputNames.length };
  } catch (e) {
    return { status: 'reject', stage: 'run', error: String(e.message).slice(0, 400) };
  }
}

async function drain() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const line = queue.shift();
    let reply;
    try {
      reply = await handle(line);
    } catch (e) {
      reply = { status: 'reject', stage: 'request', error: String(e.message).slice(0, 400) };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
  busy = false;
}

rl.on('line', (line) => {
  if (!line.trim()) return;
  queue.push(line);
  drain();
});
