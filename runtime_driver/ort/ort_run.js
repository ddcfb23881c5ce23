// Runs an ONNX model on onnxruntime (CPU, fp32), the independent reference `vtpu run --check`
// compares the chip's outputs with (runtime_driver/src/onnxruntime.cpp) and the tests check the
// compiler against (tests/ort/).
//
// usage: node ort_run.js MODEL.onnx OUT_DIR NAME=INPUT.npy ...
// Inputs and outputs are NumPy .npy files: output k (in the model's order) is written as
// OUT_DIR/output<k>.npy, OUT_DIR/outputs.txt lists the outputs' names one per line (names
// need not be file names), and OUT_DIR/onnxruntime.txt holds the onnxruntime-node version.
// onnxruntime-node comes from npm (scripts/install-deps.sh puts it on NODE_PATH's default).
'use strict';
const fs = require('fs');
const path = require('path');
let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('onnxruntime-node is not installed: run scripts/install-deps.sh (npm install into $VTPU_NODE_DIR)');
  process.exit(3);
}

const TYPES = {
  '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array],
  '|i1': ['int8', Int8Array], '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array],
  '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
  '<u8': ['uint64', BigUint64Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
};

function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = b[6];
  const headerLen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const t = TYPES[descr];
  if (!t) throw new Error(`${file}: element type ${descr} is not supported`);
  const body = b.subarray(start + headerLen);
  const data = new t[1](body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
  return new ort.Tensor(t[0], data, shape);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(TYPES).find(([, t]) => t[0] === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} cannot be written`);
  const shape = tensor.dims.length === 1 ? `${tensor.dims[0]},` : tensor.dims.join(', ');
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': (${shape}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), data]));
}

module.exports = { ort, readNpy, writeNpy };
if (require.main !== module) return;

(async () => {
  const [model, outDir, ...specs] = process.argv.slice(2);
  if (!model || !outDir) {
    console.error('usage: node ort_run.js MODEL.onnx OUT_DIR NAME=INPUT.npy ...');
    process.exit(2);
  }
  const feeds = {};
  for (const s of specs) {
    const eq = s.indexOf('=');
    feeds[s.slice(0, eq)] = readNpy(s.slice(eq + 1));
  }
  // One thread: the same sums in the same order on every run.
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  session.outputNames.forEach((name, k) => writeNpy(path.join(outDir, `output${k}.npy`), results[name]));
  fs.writeFileSync(path.join(outDir, 'outputs.txt'), session.outputNames.map((n) => n + '\n').join(''));
  fs.writeFileSync(path.join(outDir, 'onnxruntime.txt'), require('onnxruntime-node/package.json').version + '\n');
})().catch((e) => {
  console.error(`onnxruntime: ${e.message}`);
  process.exit(1);
});
