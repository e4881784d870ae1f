// WebGPU for lockstep (docs/browser.md): WGSL kernels for GPT-2's matrix
// products in the order of docs/arithmetic.md §2.1/§2.2, and the start-up
// probes that say whether this adapter fuses a*b+c, reassociates sums or
// flushes subnormals (WGSL permits all three).
//
// The product kernel: one invocation per (position t, output o). For K a
// multiple of 16, 16 contiguous blocks of L = K/16 terms, each summed from
// +0.0 in increasing k; the block sums combined by the halving tree (h = 8,
// 4, 2, 1: s[i] = s[i] + s[i+h]); the bias added last. Otherwise one
// sequential sum from +0.0. W is input-major, W[k][o] at k * nout + o;
// the output head (logits[v] = dot(h, wte[v]), no bias) gets wte
// transposed. Every product's bits pass through an integer
// XOR with a uniform that is 0 at run time but unknown to the compiler, so
// the product must be rounded to binary32 before the add: no compiler can
// contract it into a fused multiply-add.
//
// Subnormals: where the probes find them flushed (SwiftShader does), the
// host runs a product on WebGPU only when none can occur in it (see
// subnormalFree below) and computes it in WebAssembly otherwise.

import { q8TensorTable } from './checkpoint_q8.mjs';

const WG = 64;  // invocations per workgroup

// The product kernel for lanes of V outputs per invocation (V = 1: f32,
// V = 4: vec4<f32>, for widths that are a multiple of 4). A vec4
// operation is four component-wise binary32 operations, each rounded on
// its own, so every output's sum is the same either way; the vec4 form
// reads W four words at a time, which SwiftShader runs faster.
function kernelSource(V) {
  const T = V === 1 ? 'f32' : `vec${V}<f32>`;
  const U = V === 1 ? 'u32' : `vec${V}<u32>`;
  return /* wgsl */ `
struct Params {
  n: u32,      // positions
  k: u32,      // inputs per position
  nout: u32,   // outputs (this dispatch), a multiple of ${V}
  mode: u32,   // bit 0: add the bias
  zero: u32,   // 0, unknown to the compiler
  pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<${T}>;
@group(0) @binding(3) var<storage, read> b: array<${T}>;
@group(0) @binding(4) var<storage, read_write> y: array<${T}>;

// a * c rounded to binary32 on its own (see the file's comment).
fn prod(a: f32, c: ${T}) -> ${T} {
  return bitcast<${T}>(bitcast<${U}>(a * c) ^ ${U}(p.zero));
}

// One §2.1 block: +0.0, then x[k] * W[k][o] added for k in increasing
// order (o: this invocation's group of ${V} outputs).
fn block(xo: u32, k0: u32, L: u32, o: u32) -> ${T} {
  let row = p.nout / ${V}u;
  var acc = ${T}(0.0f);
  for (var i = 0u; i < L; i = i + 1u) {
    acc = acc + prod(x[xo + k0 + i], w[(k0 + i) * row + o]);
  }
  return acc;
}

@compute @workgroup_size(${WG})
fn matmul(@builtin(global_invocation_id) gid: vec3<u32>) {
  let o = gid.x;
  let t = gid.y;
  if (o >= p.nout / ${V}u || t >= p.n) { return; }
  let xo = t * p.k;
  var r: ${T};
  if (p.k % 16u == 0u) {
    // The 16 block sums, then the halving tree h = 8, 4, 2, 1 written
    // out: s[i] = s[i] + s[i + h].
    let L = p.k / 16u;
    var s0 = block(xo, 0u, L, o);   var s1 = block(xo, L, L, o);
    var s2 = block(xo, 2u * L, L, o);  var s3 = block(xo, 3u * L, L, o);
    var s4 = block(xo, 4u * L, L, o);  var s5 = block(xo, 5u * L, L, o);
    var s6 = block(xo, 6u * L, L, o);  var s7 = block(xo, 7u * L, L, o);
    let s8 = block(xo, 8u * L, L, o);  let s9 = block(xo, 9u * L, L, o);
    let s10 = block(xo, 10u * L, L, o); let s11 = block(xo, 11u * L, L, o);
    let s12 = block(xo, 12u * L, L, o); let s13 = block(xo, 13u * L, L, o);
    let s14 = block(xo, 14u * L, L, o); let s15 = block(xo, 15u * L, L, o);
    s0 = s0 + s8; s1 = s1 + s9; s2 = s2 + s10; s3 = s3 + s11;
    s4 = s4 + s12; s5 = s5 + s13; s6 = s6 + s14; s7 = s7 + s15;
    s0 = s0 + s4; s1 = s1 + s5; s2 = s2 + s6; s3 = s3 + s7;
    s0 = s0 + s2; s1 = s1 + s3;
    r = s0 + s1;
  } else {
    r = block(xo, 0u, p.k, o);
  }
  if ((p.mode & 1u) != 0u) { r = r + b[o]; }
  y[t * (p.nout / ${V}u) + o] = r;
}
`;
}

// The block-split form of the vec4 kernel, for K a multiple of 16: the 16
// §2.1 blocks of one group of 4 outputs are summed by 16 invocations (each
// block from +0.0 in increasing k, as in `block` above), written to
// workgroup memory, and after a barrier the block-0 invocation combines them
// by the same written-out halving tree and adds the bias: every output's
// operations and their order are the same as in kernelSource(4); only which
// invocation performs a block changes. A workgroup is 16 output groups x 16
// blocks (invocation li: group li % 16, block li / 16, so neighbouring
// invocations read neighbouring words of W), 16 times the parallelism of
// one invocation per 4 outputs (decode of GPT-2 124M's MLP down projection:
// 192 invocations otherwise).
const SPLIT_GROUPS = 16;  // output groups (of 4) per workgroup
const SPLIT_SOURCE = /* wgsl */ `
struct Params {
  n: u32, k: u32, nout: u32, mode: u32, zero: u32,
  pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;
var<workgroup> part: array<vec4<f32>, ${16 * SPLIT_GROUPS}>;

fn prod(a: f32, c: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(a * c) ^ vec4<u32>(p.zero));
}

@compute @workgroup_size(${16 * SPLIT_GROUPS})
fn matmul(@builtin(workgroup_id) wid: vec3<u32>,
          @builtin(local_invocation_index) li: u32) {
  let row = p.nout / 4u;
  let g = li % ${SPLIT_GROUPS}u;
  let blk = li / ${SPLIT_GROUPS}u;
  let o = wid.x * ${SPLIT_GROUPS}u + g;
  let t = wid.y;
  let L = p.k / 16u;
  // +0.0 (p.zero is 0), which the compiler cannot fold into the first add.
  var acc = vec4<f32>(bitcast<f32>(p.zero));
  if (o < row) {
    let x0 = t * p.k + blk * L;
    let w0 = blk * L * row + o;
    for (var i = 0u; i < L; i = i + 1u) {
      acc = acc + prod(x[x0 + i], w[w0 + i * row]);
    }
  }
  part[li] = acc;
  workgroupBarrier();
  if (blk == 0u && o < row) {
    var s0 = part[g];                        var s1 = part[g + ${SPLIT_GROUPS}u];
    var s2 = part[g + ${2 * SPLIT_GROUPS}u];  var s3 = part[g + ${3 * SPLIT_GROUPS}u];
    var s4 = part[g + ${4 * SPLIT_GROUPS}u];  var s5 = part[g + ${5 * SPLIT_GROUPS}u];
    var s6 = part[g + ${6 * SPLIT_GROUPS}u];  var s7 = part[g + ${7 * SPLIT_GROUPS}u];
    let s8 = part[g + ${8 * SPLIT_GROUPS}u];  let s9 = part[g + ${9 * SPLIT_GROUPS}u];
    let s10 = part[g + ${10 * SPLIT_GROUPS}u]; let s11 = part[g + ${11 * SPLIT_GROUPS}u];
    let s12 = part[g + ${12 * SPLIT_GROUPS}u]; let s13 = part[g + ${13 * SPLIT_GROUPS}u];
    let s14 = part[g + ${14 * SPLIT_GROUPS}u]; let s15 = part[g + ${15 * SPLIT_GROUPS}u];
    s0 = s0 + s8; s1 = s1 + s9; s2 = s2 + s10; s3 = s3 + s11;
    s4 = s4 + s12; s5 = s5 + s13; s6 = s6 + s14; s7 = s7 + s15;
    s0 = s0 + s4; s1 = s1 + s5; s2 = s2 + s6; s3 = s3 + s7;
    s0 = s0 + s2; s1 = s1 + s3;
    var r = s0 + s1;
    if ((p.mode & 1u) != 0u) { r = r + b[o]; }
    y[t * row + o] = r;
  }
}
`;

// The pipelines per device (the self-test compiles them at start-up, so a
// session's first product does not wait for the compiler): 1 (f32 lanes),
// 4 (vec4 lanes), 's' (vec4, block-split).
// All three share one bind group layout (`layout`), so a matrix's bind
// group serves whichever form a product runs.
const compiled = new WeakMap();
function pipelines(device) {
  if (!compiled.has(device)) {
    const C = GPUShaderStage.COMPUTE;
    const ro = { type: 'read-only-storage' };
    const layout = device.createBindGroupLayout({ entries: [
      { binding: 0, visibility: C, buffer: { type: 'uniform' } },
      { binding: 1, visibility: C, buffer: ro },
      { binding: 2, visibility: C, buffer: ro },
      { binding: 3, visibility: C, buffer: ro },
      { binding: 4, visibility: C, buffer: { type: 'storage' } }] });
    const pl = device.createPipelineLayout({ bindGroupLayouts: [layout] });
    const make = (code) => device.createComputePipeline({
      layout: pl,
      compute: { module: device.createShaderModule({ code }),
                 entryPoint: 'matmul' } });
    compiled.set(device, { layout, 1: make(kernelSource(1)),
                           4: make(kernelSource(4)), s: make(SPLIT_SOURCE) });
  }
  return compiled.get(device);
}

// The lane width for a product of `nout` outputs.
const laneWidth = (nout) => (nout % 4 === 0 ? 4 : 1);

// The kernel for a product of n positions, K inputs and `width` outputs:
// its pipeline's key and the workgroups per position. The block-split form
// where the one-invocation-per-4-outputs form would have fewer than
// SPLIT_BELOW invocations (decode's block products; not the head, nor a
// prefill of many positions, which fill the GPU as they are: on
// SwiftShader, a CPU, the split form's barriers made GPT-2's head 20 times
// slower).
const SPLIT_BELOW = 4096;
function kernelFor(n, K, width, split = true) {
  const V = laneWidth(width);
  if (split && V === 4 && K % 16 === 0 && n * (width / 4) < SPLIT_BELOW) {
    return { key: 's', groups: Math.ceil(width / 4 / SPLIT_GROUPS) };
  }
  return { key: V, groups: Math.ceil(width / V / WG) };
}

// The probes: inputs as bit patterns in a storage buffer (so that nothing
// is folded at compile time), results as bit patterns.
const PROBE = /* wgsl */ `
@group(0) @binding(0) var<storage, read> v: array<u32>;
@group(0) @binding(1) var<storage, read_write> r: array<u32>;
fn f(i: u32) -> f32 { return bitcast<f32>(v[i]); }
@compute @workgroup_size(1)
fn probe() {
  let a = f(0u); let b = f(1u); let c = f(2u);
  r[0] = bitcast<u32>(a * b + c);                              // plain
  r[1] = bitcast<u32>(bitcast<f32>(bitcast<u32>(a * b) ^ v[7]) + c); // guarded
  let big = f(3u); let one = f(4u); let nbig = f(5u);
  r[2] = bitcast<u32>((big + one) + nbig);
  var s = 0.0f;
  for (var i = 0u; i < 16u; i = i + 1u) { s = s + f(8u + i); }
  r[3] = bitcast<u32>(s);
  let tiny = f(24u); let half = f(25u);
  r[4] = bitcast<u32>(tiny * half);                            // -> subnormal
  let sub = f(26u); let zero = f(27u); let scale = f(28u);
  r[5] = bitcast<u32>(sub + zero);                             // subnormal in
  r[6] = bitcast<u32>(sub * scale);                            // subnormal in
}
`;

function probeInputs() {
  const u = new Uint32Array(32);
  u[0] = 0x3f800001;  // 1 + 2^-23
  u[1] = 0x3f7ffffe;  // 1 - 2^-23: a*b = 1 - 2^-46, rounded 1
  u[2] = 0xbf800000;  // -1
  u[3] = 0x4b800000;  // 2^24
  u[4] = 0x3f800000;  // 1
  u[5] = 0xcb800000;  // -2^24
  u[7] = 0;           // the guard's zero
  u[8] = 0x4b800000;  // 2^24, then fourteen 1s (each lost), then -2^24
  for (let i = 9; i < 23; ++i) u[i] = 0x3f800000;
  u[23] = 0xcb800000;
  u[24] = 0x00800000;  // 2^-126, the smallest normal
  u[25] = 0x3f000000;  // 0.5
  u[26] = 0x00000001;  // 2^-149, the smallest subnormal
  u[27] = 0x00000000;  // +0
  u[28] = 0x4b000000;  // 2^23
  return u;
}

// The verdicts: in-order IEEE results are what lockstep needs.
function verdicts(r) {
  const h = (x) => '0x' + (x >>> 0).toString(16).padStart(8, '0');
  return [
    { name: 'a*b+c fused (plain WGSL)', ok: r[0] === 0,
      got: h(r[0]), want: '0x00000000 (unfused; fused: 0xa8800000)' },
    { name: 'a*b+c fused (product through the XOR guard)', ok: r[1] === 0,
      got: h(r[1]), want: '0x00000000' },
    { name: 'three-term sum reassociated', ok: r[2] === 0,
      got: h(r[2]), want: '0x00000000 (in order; reassociated: 0x3f800000)' },
    { name: 'loop sum reassociated', ok: r[3] === 0,
      got: h(r[3]), want: '0x00000000 (in order)' },
    { name: 'subnormal results flushed', ok: r[4] === 0x00400000,
      got: h(r[4]), want: '0x00400000 (2^-127)' },
    { name: 'subnormal inputs flushed (add)', ok: r[5] === 0x00000001,
      got: h(r[5]), want: '0x00000001' },
    { name: 'subnormal inputs flushed (multiply)', ok: r[6] === 0x00800000,
      got: h(r[6]), want: '0x00800000' },
  ];
}

async function readBack(device, src, bytes) {
  const rb = device.createBuffer({
    size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, rb, 0, bytes);
  device.queue.submit([enc.finish()]);
  await rb.mapAsync(GPUMapMode.READ);
  const out = new Uint8Array(rb.getMappedRange().slice(0));
  rb.unmap();
  rb.destroy();
  return out;
}

// The adapter and device (with the adapter's largest storage-buffer
// limits), or { error } when this browser has no WebGPU.

// One self-test row's verdict, the binary32 and int8 kernels alike: a row
// that can meet a subnormal passes when the guard refuses it (whatever the
// GPU gave); any other row passes when every output equals IEEE's bits and
// the guard lets it through.
function selfTestVerdict(yu, wu, sub, free) {
  let diff = -1;
  for (let i = 0; i < yu.length; ++i) if (yu[i] !== wu[i]) { diff = i; break; }
  const h = (v) => '0x' + v.toString(16).padStart(8, '0');
  if (sub) {
    return { ok: !free,
             got: (diff < 0 ? 'the GPU gives IEEE\'s bits'
                 : `the GPU gives ${h(yu[diff])}, IEEE ${h(wu[diff])}`) +
                 (free ? '; NOT refused by the guard' : '; the guard refuses it') };
  }
  return { ok: diff < 0 && free,
           got: diff < 0 ? `${yu.length} outputs equal`
               : `output ${diff}: ${h(yu[diff])} vs ${h(wu[diff])}` };
}

export async function openGpu() {
  if (typeof navigator === 'undefined' || !navigator.gpu) {
    return { error: 'this browser has no WebGPU (navigator.gpu is missing)' };
  }
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { error: 'navigator.gpu.requestAdapter() gave no adapter' };
  const L = adapter.limits;
  const device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
      maxBufferSize: L.maxBufferSize,
    },
  });
  let info = adapter.info || {};
  const describe = [info.vendor, info.architecture, info.device,
                    info.description].filter((s) => s).join(' / ');
  // A CPU implementation of the GPU (SwiftShader, llvmpipe): GpuProjector
  // then keeps the one-invocation-per-4-outputs form (kernelFor), whose
  // bits are the block-split form's (both pass the self-test).
  const cpu = !!info.isFallbackAdapter || adapter.isFallbackAdapter === true ||
      /swiftshader|llvmpipe|lavapipe/i.test(describe);
  return { adapter, device, description: describe || '(no adapter info)', cpu,
           limits: { maxStorageBufferBindingSize: L.maxStorageBufferBindingSize,
                     maxBufferSize: L.maxBufferSize } };
}

export async function runProbes(device) {
  const module = device.createShaderModule({ code: PROBE });
  const pipeline = device.createComputePipeline({
    layout: 'auto', compute: { module, entryPoint: 'probe' } });
  const input = probeInputs();
  const inBuf = device.createBuffer({
    size: input.byteLength,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(inBuf, 0, input);
  const outBuf = device.createBuffer({
    size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const bind = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: inBuf } },
              { binding: 1, resource: { buffer: outBuf } }] });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(1);
  pass.end();
  device.queue.submit([enc.finish()]);
  const r = new Uint32Array((await readBack(device, outBuf, 64)).buffer);
  inBuf.destroy();
  outBuf.destroy();
  return verdicts(r);
}

// The smallest biased exponent field among the nonzero words of a binary32
// array (256 when all are zero; a subnormal's is 0).
export function minExponent(f) {
  const u = new Uint32Array(f.buffer, f.byteOffset, f.length);
  let m = 256;
  for (let i = 0; i < u.length; ++i) {
    const v = u[i] & 0x7fffffff;
    if (v !== 0) {
      const e = v >>> 23;
      if (e < m) m = e;
    }
  }
  return m;
}

// Whether a product y = x . W (+ b) in the §2.1/§2.2 order can meet a
// subnormal operand or result, from the smallest exponents of x, W and b
// (minExponent). It cannot when no operand is subnormal, every nonzero
// product has |x w| >= 2^-103 and every nonzero bias |b| >= 2^-103: all
// terms, and so every partial
// sum, are then multiples of 2^-126 (2^(E - 23) for the smallest term
// exponent E >= -103), so a nonzero exact sum is at least 2^-126, and its
// rounding too. Flush-to-zero and denormals-are-zero then change nothing.
export function subnormalFree(ex, ew, eb) {
  // A subnormal operand (exponent field 0) is read as zero where
  // denormals are zero, whatever it is multiplied by.
  if (ex === 0 || ew === 0 || eb === 0) return false;
  if (ex === 256 || ew === 256) return eb === 256 || eb - 127 >= -103;
  return (ex - 127) + (ew - 127) >= -103 && (eb === 256 || eb - 127 >= -103);
}

// §2.1/§2.2 in JavaScript: each binary32 operation as Math.fround of the
// binary64 result, which is the binary32 result (binary64 has more than
// 2 * 24 + 2 bits, so + - * of binary32 values round once, correctly).
function referenceMatmul(x, w, b, n, K, N) {
  const f = Math.fround;
  const y = new Float32Array(n * N);
  for (let t = 0; t < n; ++t) {
    for (let o = 0; o < N; ++o) {
      const wt = (k) => w[k * N + o];
      let r;
      if (K % 16 === 0) {
        const L = K / 16, s = new Array(16).fill(0);
        for (let blk = 0; blk < 16; ++blk) {
          let acc = 0;
          for (let i = 0; i < L; ++i) {
            const k = blk * L + i;
            acc = f(acc + f(x[t * K + k] * wt(k)));
          }
          s[blk] = acc;
        }
        for (let h = 8; h > 0; h >>= 1) {
          for (let i = 0; i < h; ++i) s[i] = f(s[i] + s[i + h]);
        }
        r = s[0];
      } else {
        r = 0;
        for (let k = 0; k < K; ++k) r = f(r + f(x[t * K + k] * wt(k)));
      }
      y[t * N + o] = b ? f(r + b[o]) : r;
    }
  }
  return y;
}

// The product kernel on small seeded inputs against referenceMatmul, bit
// for bit, and two inputs that make subnormals (a product, and a sum of
// two normal products): what the adapter gives there, and that
// subnormalFree refuses them (the host would compute them in WebAssembly).
// Returns rows for the page's table.
export async function kernelSelfTest(device) {
  const pipes = pipelines(device);
  let seed = 0x2545f491;
  const rnd = () => {  // xorshift32, values in about [-2, 2)
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return Math.fround((seed / 4294967296 - 0.5) * 4);
  };
  const fill = (n) => Float32Array.from({ length: n }, rnd);
  const cases = [
    { name: '3 positions, K 48, 70 outputs, bias', n: 3, K: 48, N: 70 },
    { name: '3 positions, K 64, 96 outputs (vec4), bias', n: 3, K: 64,
      N: 96 },
    { name: '2 positions, K 5 (sequential), 3 outputs', n: 2, K: 5, N: 3 },
    { name: 'no bias: K 32, 40 outputs (the head)', n: 1, K: 32, N: 40,
      head: true },
    { name: 'a subnormal product', n: 1, K: 16, N: 1, sub: 'product' },
    { name: 'a subnormal sum of normal products', n: 1, K: 2, N: 1,
      sub: 'sum' },
    { name: 'a subnormal input times 2^40', n: 1, K: 1, N: 1,
      sub: 'input' },
  ];
  const rows = [];
  for (const c of cases) {
    let x = fill(c.n * c.K), w = fill(c.K * c.N);
    let b = c.head ? null : fill(c.N);
    if (c.sub === 'product') {
      x = new Float32Array(16).fill(2 ** -70);
      w = new Float32Array(16).fill(2 ** -70);
      b = new Float32Array(1);
    } else if (c.sub === 'input') {
      x = Float32Array.of(2 ** -140);
      w = Float32Array.of(2 ** 40);
      b = null;
    } else if (c.sub === 'sum') {
      x = Float32Array.of(1.25 * 2 ** -100, -(2 ** -100));
      w = Float32Array.of(2 ** -26, 2 ** -26);
      b = null;
    }
    const buf = (data, usage) => {
      const g = device.createBuffer({
        size: Math.max(16, data.byteLength),
        usage: usage | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(g, 0, data);
      return g;
    };
    const S = GPUBufferUsage.STORAGE;
    const u = buf(new Uint32Array([c.n, c.K, c.N, b ? 1 : 0, 0, 0, 0, 0]),
                  GPUBufferUsage.UNIFORM);
    const bx = buf(x, S), bw = buf(w, S), bb = buf(b ?? new Float32Array(4), S);
    const by = buf(new Float32Array(c.n * c.N), S | GPUBufferUsage.COPY_SRC);
    const V = laneWidth(c.N);
    // The vec4 cases with K a multiple of 16 run both vec4 forms (the
    // projector picks one per product, kernelFor).
    const keys = V === 4 && c.K % 16 === 0 ? ['s', 4] : [V];
    const want = referenceMatmul(x, w, b, c.n, c.K, c.N);
    const free = subnormalFree(minExponent(x), minExponent(w),
                               b ? minExponent(b) : 256);
    for (const key of keys) {
      const groups = key === 's' ? Math.ceil(c.N / 4 / SPLIT_GROUPS)
                                 : Math.ceil(c.N / V / WG);
      const bind = device.createBindGroup({
        layout: pipes.layout,
        entries: [u, bx, bw, bb, by].map((g, i) => (
          { binding: i, resource: { buffer: g } })) });
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipes[key]);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(groups, c.n);
      pass.end();
      device.queue.submit([enc.finish()]);
      const y = new Float32Array((await readBack(device, by, c.n * c.N * 4))
                                     .buffer);
      const wu = new Uint32Array(want.buffer);
      const { ok, got } = selfTestVerdict(new Uint32Array(y.buffer), wu, c.sub, free);
      const form = key === 's' ? 'vec4, block-split' : V === 4 ? 'vec4' : 'f32';
      rows.push({ name: `kernel (${form}): ${c.name}`, ok, got,
                  want: c.sub ? 'refused by the guard (WebAssembly computes it)'
                              : 'equal to the Math.fround reference' });
    }
    for (const g of [u, bx, bw, bb, by]) g.destroy();
  }
  return rows;
}

// The projector of a WebSession (web/lockstep-web.mjs): every block matrix
// and bias uploaded once from the session's plain-layout weights, wte
// transposed in row chunks that fit the binding limit; each product is one
// dispatch (per head chunk) and one read-back into the session's memory.
// guard: the adapter flushes subnormals, so a product that subnormalFree
// does not clear is computed in WebAssembly (web_project_cpu) instead.
export class GpuProjector {
  // split: whether small products may run the block-split kernel form
  // (kernelFor; openGpu's `cpu` says where it is slower).
  constructor(device, session, limits, guard = true, split = true) {
    this.device = device;
    this.guard = guard;
    this.split = split;
    this.fallbacks = 0;
    this.timeMs = [0, 0, 0, 0, 0];  // per product kind (PRODUCT_NAMES)
    this.pipes = pipelines(device);
    const c = session.config, C = c.n_embd;
    const w = session.weights();
    this.buffers = [];
    const upload = (data) => {
      const buf = device.createBuffer({
        size: Math.max(16, data.byteLength),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buf, 0, data);
      this.buffers.push(buf);
      return buf;
    };
    const N = session.plan.maxPrefix;
    const maxIO = Math.ceil(Math.max(N * 4 * C, c.n_vocab + 4) / 2) * 2;
    const io = (usage) => device.createBuffer({ size: maxIO * 4, usage });
    this.x = io(GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    this.y = io(GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    this.read = io(GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST);
    this.submitMs = 0;  // writes, encoding and submit (host side)
    this.waitMs = 0;    // submit to mapped (the GPU and the round trip)
    this.none = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
    // Block matrices by their word offset (the controller's request.w).
    this.mats = new Map();
    const V = c.n_vocab, T = c.n_ctx;
    for (let l = 0; l < c.n_layer; ++l) {
      const B = V * C + T * C + l * (12 * C * C + 13 * C);
      for (const [off, K, Nout] of [
        [B + 2 * C, C, 3 * C], [B + 5 * C + 3 * C * C, C, C],
        [B + 8 * C + 4 * C * C, C, 4 * C], [B + 12 * C + 8 * C * C, 4 * C, C],
      ]) {
        const wv = w.subarray(off, off + K * Nout);
        const bv = w.subarray(off + K * Nout, off + K * Nout + Nout);
        const wb = upload(wv), bb = upload(bv);
        this.mats.set(off, { ew: minExponent(wv), eb: minExponent(bv),
                             parts: [{ row0: 0, rows: Nout, width: Nout,
                                       bind: this.bind(wb, bb) }] });
      }
    }
    // The head: wte rows in chunks within the binding limit, each stored
    // transposed, [C][width] with the width padded to a multiple of 4 by
    // zero columns (outputs that are computed and dropped), so that
    // neighbouring invocations read neighbouring words; every output's sum
    // is the same.
    const maxRows = Math.max(4, 4 * Math.floor(
        Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) /
        (16 * C)) - 4);
    const parts = [];
    for (let r0 = 0; r0 < V; r0 += maxRows) {
      const rows = Math.min(maxRows, V - r0);
      const width = Math.ceil(rows / 4) * 4;
      const tr = new Float32Array(width * C);
      for (let v = 0; v < rows; ++v) {
        const base = (r0 + v) * C;
        for (let k = 0; k < C; ++k) tr[k * width + v] = w[base + k];
      }
      parts.push({ row0: r0, rows, width,
                   bind: this.bind(upload(tr), this.none) });
    }
    this.head = { ew: minExponent(w.subarray(0, V * C)), eb: 256, parts };
    this.headChunks = parts.length;
  }

  // A part's bind group with a uniform of its own, written only when the
  // product's shape changes (decode: once), so a product is one input
  // write, one submit and one read-back.
  bind(wb, bb) {
    const uniform = this.device.createBuffer({
      size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.buffers.push(uniform);
    return { uniform, shape: '', group: this.device.createBindGroup({
      layout: this.pipes.layout,
      entries: [uniform, this.x, wb, bb, this.y].map((buffer, i) => (
        { binding: i, resource: { buffer } })) }) };
  }

  // request: web/lockstep-web.mjs's pending product.
  async project(session, r) {
    const t0 = performance.now();
    const m = r.head ? this.head : this.mats.get(r.w);
    if (!m) throw new Error(`no GPU matrix at word ${r.w}`);
    const mem = session.memory.buffer;
    const x = new Float32Array(mem, r.x, r.n * r.nIn);
    if (this.guard && !subnormalFree(minExponent(x), m.ew, m.eb)) {
      // A subnormal could occur, which this adapter would flush:
      // WebAssembly computes this product (the same order, IEEE).
      ++this.fallbacks;
      session.check(session.exports.web_project_cpu(), 'product');
    } else {
      await this.dispatch(m, r, mem);
    }
    this.timeMs[r.which] += performance.now() - t0;
  }

  async dispatch(m, r, mem) {
    const dev = this.device;
    const t0 = performance.now();
    dev.queue.writeBuffer(this.x, 0, mem, r.x, r.n * r.nIn * 4);
    const outWords = r.n * r.nOut;
    // Every part (head chunk) in one command buffer and one submit.
    const enc = dev.createCommandEncoder();
    for (const part of m.parts) {
      const shape = `${r.n},${r.nIn}`;
      if (part.bind.shape !== shape) {
        dev.queue.writeBuffer(part.bind.uniform, 0, new Uint32Array(
            [r.n, r.nIn, part.width, r.head ? 0 : 1, 0, 0, 0, 0]));
        part.bind.shape = shape;
      }
      const pass = enc.beginComputePass();
      const kern = kernelFor(r.n, r.nIn, part.width, this.split);
      pass.setPipeline(this.pipes[kern.key]);
      pass.setBindGroup(0, part.bind.group);
      pass.dispatchWorkgroups(kern.groups, r.n);
      pass.end();
      // A head chunk's rows go to their place in the logits (n = 1); the
      // chunks share y, so each is copied out before the next one runs
      // (commands of one queue run in order).
      enc.copyBufferToBuffer(this.y, 0, this.read, part.row0 * 4,
                             part.rows * r.n * 4);
    }
    dev.queue.submit([enc.finish()]);
    const t1 = performance.now();
    await this.read.mapAsync(GPUMapMode.READ, 0, outWords * 4);
    this.submitMs += t1 - t0;
    this.waitMs += performance.now() - t1;
    new Uint8Array(mem, r.y, outWords * 4)
        .set(new Uint8Array(this.read.getMappedRange(0, outWords * 4)));
    this.read.unmap();
  }

  destroy() {
    for (const b of [...this.buffers, this.x, this.y, this.read, this.none]) {
      b.destroy();
    }
  }
}

// ------------------------------------------------------- grouped int8 (§7)
//
// The int8 product y = x . W + b of docs/arithmetic.md §7.3 on the §7.6
// layout as stored in the file (panels of 64 outputs; per group of 64
// inputs a block of 16 x 64 words, four int8 levels of one output in a
// word, then the 64 bfloat16 scales): one invocation per (position t,
// output o). The controller module has quantized x per position and group
// (§7.2) into qx (levels, four to a word) and sx (binary32 scales). For
// each group g, in order: isum = the exact int32 sum of the 64 products,
// 16 dot4I8Packed (exact, |isum| <= 64 * 127 * 127 < 2^24, so the order
// inside the group is free); scale = sx[g] * sw[o][g]; t = f32(isum) *
// scale (the conversion is exact); acc = acc + t from +0.0; then the bias.
// Both products pass through the XOR guard, so neither can be fused into
// the add nor reassociated with the other, and acc starts from a +0.0 the
// compiler cannot see (p.zero) so `0 + t` is not folded. A head whose
// width is not a multiple of 64 gets its last panel padded to 64 columns
// (zero levels and scales; those outputs are computed and dropped).
export const Q8_DOT_FEATURE = 'packed_4x8_integer_dot_product';

function q8KernelSource(builtinDot) {
  // Without the language feature: the same exact integer sum, by bytes.
  const dot = builtinDot
      ? 'fn dot4(a: u32, c: u32) -> i32 { return dot4I8Packed(a, c); }'
      : `fn dot4(a: u32, c: u32) -> i32 {
  let x = bitcast<i32>(a);
  let z = bitcast<i32>(c);
  return extractBits(x, 0u, 8u) * extractBits(z, 0u, 8u) +
         extractBits(x, 8u, 8u) * extractBits(z, 8u, 8u) +
         extractBits(x, 16u, 8u) * extractBits(z, 16u, 8u) +
         extractBits(x, 24u, 8u) * extractBits(z, 24u, 8u);
}`;
  return /* wgsl */ `${builtinDot ? `requires ${Q8_DOT_FEATURE};` : ''}
struct Params {
  n: u32,      // positions
  k: u32,      // inputs per position, a multiple of 64
  nout: u32,   // outputs, a multiple of 64 (the row stride of y)
  mode: u32,   // bit 0: add the bias
  zero: u32,   // 0, unknown to the compiler
  pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xq: array<u32>;  // [n][k / 4]
@group(0) @binding(2) var<storage, read> sx: array<f32>;  // [n][k / 64]
@group(0) @binding(3) var<storage, read> w: array<u32>;   // §7.6 panels
@group(0) @binding(4) var<storage, read> b: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;

${dot}

// v rounded to binary32 on its own (the XOR guard of the binary32 kernel).
fn rounded(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) ^ p.zero); }

@compute @workgroup_size(${WG})
fn q8matmul(@builtin(global_invocation_id) gid: vec3<u32>) {
  let o = gid.x;
  let t = gid.y;
  if (o >= p.nout || t >= p.n) { return; }
  let G = p.k / 64u;
  let j = o % 64u;
  let panel = (o / 64u) * 16u * (p.k + 2u * G);  // words: 64 (K + 2G) bytes
  let xo = t * (p.k / 4u);
  var acc = bitcast<f32>(p.zero);  // +0.0
  for (var g = 0u; g < G; g = g + 1u) {
    let blk = panel + g * 1056u;   // 66 * 64 bytes per group block
    let xg = xo + g * 16u;
    var isum = 0i;
    for (var i = 0u; i < 16u; i = i + 1u) {
      isum = isum + dot4(xq[xg + i], w[blk + i * 64u + j]);
    }
    // The bfloat16 scale of (o, g), widened: bits << 16.
    let sw = bitcast<f32>(
        ((w[blk + 1024u + j / 2u] >> ((j & 1u) * 16u)) & 0xffffu) << 16u);
    let scale = rounded(sx[t * G + g] * sw);
    acc = acc + rounded(f32(isum) * scale);
  }
  if ((p.mode & 1u) != 0u) { acc = acc + b[o]; }
  y[t * p.nout + o] = acc;
}

// The split form (decode's small products): a workgroup is the 64 outputs
// of one panel x 4 lanes. For each run of 16 groups, the lanes compute the
// groups' terms rounded(f32(isum) * scale) exactly as q8matmul does, into
// workgroup memory; after a barrier lane 0 adds them to acc in increasing
// g. Every output's operations and order are q8matmul's; only which
// invocation computes a term changes.
var<workgroup> terms: array<f32, 1024>;  // [16 groups][64 outputs]

@compute @workgroup_size(64, 4)
fn q8split(@builtin(workgroup_id) wid: vec3<u32>,
           @builtin(local_invocation_id) lid: vec3<u32>) {
  let j = lid.x;
  let s = lid.y;
  let o = wid.x * 64u + j;
  let t = wid.y;
  let G = p.k / 64u;
  let panel = wid.x * 16u * (p.k + 2u * G);
  let xo = t * (p.k / 4u);
  var acc = bitcast<f32>(p.zero);  // +0.0
  for (var g0 = 0u; g0 < G; g0 = g0 + 16u) {
    for (var gi = s; gi < 16u; gi = gi + 4u) {
      let g = g0 + gi;
      if (g < G) {
        let blk = panel + g * 1056u;
        let xg = xo + g * 16u;
        var isum = 0i;
        for (var i = 0u; i < 16u; i = i + 1u) {
          isum = isum + dot4(xq[xg + i], w[blk + i * 64u + j]);
        }
        let sw = bitcast<f32>(
            ((w[blk + 1024u + j / 2u] >> ((j & 1u) * 16u)) & 0xffffu) << 16u);
        let scale = rounded(sx[t * G + g] * sw);
        terms[gi * 64u + j] = rounded(f32(isum) * scale);
      }
    }
    workgroupBarrier();
    if (s == 0u) {
      let m = min(16u, G - g0);
      for (var gi = 0u; gi < m; gi = gi + 1u) { acc = acc + terms[gi * 64u + j]; }
    }
    workgroupBarrier();
  }
  if (s == 0u) {
    if ((p.mode & 1u) != 0u) { acc = acc + b[o]; }
    y[t * p.nout + o] = acc;
  }
}
`;
}

// Per device and dot form: the two entry points over one bind group layout.
const compiledQ8 = new WeakMap();
function q8Pipeline(device, builtinDot) {
  let byDot = compiledQ8.get(device);
  if (!byDot) compiledQ8.set(device, byDot = new Map());
  if (!byDot.has(builtinDot)) {
    const C = GPUShaderStage.COMPUTE, ro = { type: 'read-only-storage' };
    const layout = device.createBindGroupLayout({ entries: [
      { binding: 0, visibility: C, buffer: { type: 'uniform' } },
      ...[1, 2, 3, 4].map((binding) => ({ binding, visibility: C, buffer: ro })),
      { binding: 5, visibility: C, buffer: { type: 'storage' } }] });
    const pl = device.createPipelineLayout({ bindGroupLayouts: [layout] });
    const module = device.createShaderModule({ code: q8KernelSource(builtinDot) });
    const make = (entryPoint) => device.createComputePipeline(
        { layout: pl, compute: { module, entryPoint } });
    byDot.set(builtinDot, { layout, plain: make('q8matmul'),
                            split: make('q8split') });
  }
  return byDot.get(builtinDot);
}

// Whether this WGSL implementation has dot4I8Packed.
export function hasQ8Dot(gpu = globalThis.navigator?.gpu) {
  return !!gpu?.wgslLanguageFeatures?.has?.(Q8_DOT_FEATURE);
}

const q8MatrixBytes = (K, N) => N * (K + 2 * (K / 64));

// The smallest biased exponent field among the nonzero bfloat16 scales of
// a §7.6 matrix M [K, N] at bytes[at..] (256 when all are zero; a
// subnormal's is 0): the weights' side of subnormalFree.
export function q8ScaleMinExponent(bytes, at, K, N) {
  const G = K / 64;
  let m = 256;
  for (let c0 = 0; c0 < N; c0 += 64) {
    const pw = Math.min(64, N - c0);
    for (let g = 0; g < G; ++g) {
      const s0 = at + c0 * (K + 2 * G) + g * 66 * pw + 64 * pw;
      for (let j = 0; j < pw; ++j) {
        const s = bytes[s0 + 2 * j] | (bytes[s0 + 2 * j + 1] << 8);
        if ((s & 0x7fff) !== 0) m = Math.min(m, (s >> 7) & 0xff);
      }
    }
  }
  return m;
}

// M [K, N] from the §7.6 bytes at bytes[at..] as the kernel reads it:
// whole panels of 64 columns; a last panel of pw < 64 columns is copied
// into a panel of 64 (zero levels and scales in the other columns).
// Returns { data (Uint8Array), nout (N rounded up to 64) }.
export function q8PaddedMatrix(bytes, at, K, N) {
  const G = K / 64, full = Math.floor(N / 64) * 64;
  const pw = N - full;
  if (pw === 0) return { data: bytes.subarray(at, at + q8MatrixBytes(K, N)), nout: N };
  const data = new Uint8Array((full + 64) * (K + 2 * G));
  data.set(bytes.subarray(at, at + full * (K + 2 * G)));
  const src = at + full * (K + 2 * G), dst = full * (K + 2 * G);
  for (let g = 0; g < G; ++g) {
    const sb = src + g * 66 * pw, db = dst + g * 66 * 64;
    for (let i = 0; i < 16; ++i) {
      for (let j = 0; j < pw; ++j) {
        const s = sb + (i * pw + j) * 4, d = db + (i * 64 + j) * 4;
        data.set(bytes.subarray(s, s + 4), d);
      }
    }
    data.set(bytes.subarray(sb + 64 * pw, sb + 66 * pw), db + 64 * 64);
  }
  return { data, nout: full + 64 };
}

// §7.3 in JavaScript (Math.fround of each binary64 product and sum is the
// binary32 result; the integer sums are exact in binary64).
function referenceQ8(qx, sx, m, b, n, K, N) {
  const f = Math.fround, G = K / 64;
  const y = new Float32Array(n * N);
  const wq = new Int8Array(m.buffer, m.byteOffset, m.length);
  const sw = new Float32Array(1), swu = new Uint32Array(sw.buffer);
  for (let t = 0; t < n; ++t) {
    for (let o = 0; o < N; ++o) {
      const c0 = o - (o % 64), pw = Math.min(64, N - c0), j = o % 64;
      let acc = 0;
      for (let g = 0; g < G; ++g) {
        const blk = c0 * (K + 2 * G) + g * 66 * pw;
        let isum = 0;
        for (let kk = 0; kk < 64; ++kk) {
          isum += qx[t * K + g * 64 + kk] *
                  wq[blk + ((kk >> 2) * pw + j) * 4 + (kk & 3)];
        }
        const s = blk + 64 * pw + 2 * j;
        swu[0] = (m[s] | (m[s + 1] << 8)) << 16;
        const scale = f(sx[t * G + g] * sw[0]);
        acc = f(acc + f(isum * scale));
      }
      y[t * N + o] = b ? f(acc + b[o]) : acc;
    }
  }
  return y;
}

// The int8 projector's GPU side for one matrix: buffers and a dispatch
// (shared by GpuProjectorQ8 and the self-test).
class Q8Runner {
  // split: whether small products (fewer than SPLIT_BELOW outputs in all)
  // run q8split.
  constructor(device, builtinDot, maxIn, maxOut, split = false) {
    this.device = device;
    this.pipes = q8Pipeline(device, builtinDot);
    this.split = split;
    const S = GPUBufferUsage.STORAGE, D = GPUBufferUsage.COPY_DST;
    const mk = (size, usage) => device.createBuffer(
        { size: Math.max(16, Math.ceil(size / 16) * 16), usage });
    this.xq = mk(maxIn, S | D);
    this.sx = mk(maxIn / 16, S | D);
    this.y = mk(maxOut * 4, S | GPUBufferUsage.COPY_SRC);
    this.read = mk(maxOut * 4, GPUBufferUsage.MAP_READ | D);
    this.none = mk(16, S);
    this.owned = [this.xq, this.sx, this.y, this.read, this.none];
    this.submitMs = 0;  // writes, encoding and submit (host side)
    this.waitMs = 0;    // submit to mapped (the GPU and the round trip)
  }

  upload(data) {
    const buf = this.device.createBuffer({
      size: Math.max(16, Math.ceil(data.byteLength / 16) * 16),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const aligned = data.byteLength % 4 === 0 ? data
        : (() => { const c = new Uint8Array(Math.ceil(data.byteLength / 4) * 4);
                   c.set(data); return c; })();
    this.device.queue.writeBuffer(buf, 0, aligned);
    this.owned.push(buf);
    return buf;
  }

  // A matrix's bind group with a uniform of its own, written only when the
  // product's shape changes (decode: once).
  bind(wbuf, bbuf) {
    const uniform = this.device.createBuffer({
      size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.owned.push(uniform);
    return { uniform, shape: '', group: this.device.createBindGroup({
      layout: this.pipes.layout,
      entries: [uniform, this.xq, this.sx, wbuf, bbuf ?? this.none, this.y]
          .map((buffer, i) => ({ binding: i, resource: { buffer } })) }) };
  }

  // y[t][o] for t < n, o < N of the matrix bound in `bind` (nout columns
  // computed), from qx (n K bytes) and sx (n K / 64 floats), into the
  // Uint8Array `out` (n N floats).
  // form: 'split' or 'plain' (the self-test), else by this.split and size.
  async run(bind, qx, sx, n, K, N, nout, bias, out, form) {
    const dev = this.device;
    const t0 = performance.now();
    dev.queue.writeBuffer(this.xq, 0, qx.buffer, qx.byteOffset, n * K);
    dev.queue.writeBuffer(this.sx, 0, sx.buffer, sx.byteOffset, n * K / 16);
    const shape = `${n},${K},${nout},${bias ? 1 : 0}`;
    if (bind.shape !== shape) {
      dev.queue.writeBuffer(bind.uniform, 0, new Uint32Array(
          [n, K, nout, bias ? 1 : 0, 0, 0, 0, 0]));
      bind.shape = shape;
    }
    const enc = dev.createCommandEncoder();
    const pass = enc.beginComputePass();
    const split = form ? form === 'split' : this.split && n * nout < SPLIT_BELOW;
    pass.setPipeline(split ? this.pipes.split : this.pipes.plain);
    pass.setBindGroup(0, bind.group);
    pass.dispatchWorkgroups(nout / WG, n);
    pass.end();
    // Rows of nout outputs to rows of N (the head: n = 1, a prefix).
    if (nout === N || n === 1) {
      enc.copyBufferToBuffer(this.y, 0, this.read, 0, n * N * 4);
    } else {
      for (let t = 0; t < n; ++t) {
        enc.copyBufferToBuffer(this.y, t * nout * 4, this.read, t * N * 4, N * 4);
      }
    }
    dev.queue.submit([enc.finish()]);
    const t1 = performance.now();
    await this.read.mapAsync(GPUMapMode.READ, 0, n * N * 4);
    this.submitMs += t1 - t0;
    this.waitMs += performance.now() - t1;
    out.set(new Uint8Array(this.read.getMappedRange(0, n * N * 4)));
    this.read.unmap();
  }

  destroy() { for (const b of this.owned) b.destroy(); }
}

// The int8 kernel on seeded random §7.6 matrices against referenceQ8, bit
// for bit (with bias and several positions; the head's form: no bias and
// a padded last panel of 6 columns), and one product whose scales' product
// is subnormal (2^-70 * 2^-70), which subnormalFree must refuse. Rows for
// the page's table, as kernelSelfTest's.
export async function q8KernelSelfTest(device, builtinDot) {
  let seed = 0x9e3779b9;
  const next = () => {
    seed ^= seed << 13; seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5; seed >>>= 0;
    return seed;
  };
  const level = () => (next() % 255) - 127;  // [-127, 127]
  const f32 = (e) => {  // a binary32 with exponent e and random significand
    const u = new Uint32Array([((127 + e) << 23) | (next() & 0x7fffff)]);
    return new Float32Array(u.buffer)[0];
  };
  const cases = [
    { name: '3 positions, K 128, 128 outputs, bias', n: 3, K: 128, N: 128,
      bias: true },
    { name: 'no bias, K 64, 70 outputs (the head: a padded last panel)',
      n: 1, K: 64, N: 70 },
    { name: 'a subnormal scale product (2^-70 x 2^-70)', n: 1, K: 64, N: 64,
      sub: true },
    { name: '2 positions, K 1088 (17 groups: the split form\'s second run), ' +
            '64 outputs, bias', n: 2, K: 1088, N: 64, bias: true },
  ];
  const rows = [];
  const dotName = builtinDot ? 'dot4I8Packed' : 'bytes';
  for (const c of cases) {
    const G = c.K / 64;
    const m = new Uint8Array(q8MatrixBytes(c.K, c.N));
    for (let c0 = 0; c0 < c.N; c0 += 64) {
      const pw = Math.min(64, c.N - c0);
      for (let g = 0; g < G; ++g) {
        const blk = c0 * (c.K + 2 * G) + g * 66 * pw;
        for (let i = 0; i < 64 * pw; ++i) m[blk + i] = level() & 0xff;
        for (let j = 0; j < pw; ++j) {
          const e = c.sub ? -70 : -12 + (next() % 10);
          const s = c.sub ? 0x1c80 : ((127 + e) << 7) | (next() & 0x7f);
          m[blk + 64 * pw + 2 * j] = s & 0xff;
          m[blk + 64 * pw + 2 * j + 1] = s >> 8;
        }
      }
    }
    const qx = Int8Array.from({ length: c.n * c.K }, level);
    if (!c.sub) qx[0] = 127, qx[1] = -127;
    const sx = Float32Array.from({ length: c.n * G },
                                 () => (c.sub ? 2 ** -70 : f32(-8 + (next() % 6))));
    const b = c.bias ? Float32Array.from({ length: c.N }, () => f32(-2)) : null;
    const padded = q8PaddedMatrix(m, 0, c.K, c.N);
    const runner = new Q8Runner(device, builtinDot, c.n * c.K,
                                c.n * padded.nout);
    const bind = runner.bind(runner.upload(padded.data),
                             b ? runner.upload(new Uint8Array(b.buffer)) : null);
    const wu = new Uint32Array(referenceQ8(qx, sx, m, b, c.n, c.K, c.N).buffer);
    const free = subnormalFree(minExponent(sx), q8ScaleMinExponent(m, 0, c.K, c.N),
                               b ? minExponent(b) : 256);
    for (const form of c.sub ? ['plain'] : ['plain', 'split']) {
      const out = new Uint8Array(c.n * c.N * 4);
      await runner.run(bind, new Uint8Array(qx.buffer), sx, c.n, c.K, c.N,
                       padded.nout, !!b, out, form);
      const { ok, got } = selfTestVerdict(new Uint32Array(out.buffer), wu, c.sub, free);
      rows.push({ name: `kernel (int8, ${dotName}${form === 'split' ? ', split' : ''}): ${c.name}`,
                  ok, got,
                  want: c.sub ? 'refused by the guard (WebAssembly computes it)'
                              : 'equal to the §7.3 reference' });
    }
    runner.destroy();
  }
  return rows;
}

// The projector of an int8 WebSession (web/lockstep-web.mjs): each block
// matrix uploaded once as the file stores it, the head with its last panel
// padded, the biases as binary32; each product is one dispatch and one
// read-back. guard: as GpuProjector's, from the exponents of the input's
// scales, the matrix's scales and the bias (the same argument: with
// E = ex + ew >= -103 every scale product is normal and at least 2^E, so
// every term f32(isum) * scale, partial sum and the bias is a multiple of
// 2^(E - 23) >= 2^-126).
export class GpuProjectorQ8 {
  // split: as GpuProjector's (decode's small products run q8split).
  constructor(device, session, limits, guard = true, builtinDot = true,
              split = true) {
    this.device = device;
    this.guard = guard;
    this.fallbacks = 0;
    this.timeMs = [0, 0, 0, 0, 0];
    this.headChunks = 1;
    const c = session.config, C = c.n_embd;
    const bytes = session.weightBytes();
    const N = session.plan.maxPrefix;
    this.runner = new Q8Runner(device, builtinDot, N * 4 * C,
                               Math.max(N * 4 * C, Math.ceil(c.n_vocab / 64) * 64),
                               split);
    const at = new Map(q8TensorTable(c).tensors.map((t) => [t.name, t.offset]));
    this.mats = new Map();
    for (let l = 0; l < c.n_layer; ++l) {
      for (const [name, K, Nout] of [['attn.c_attn', C, 3 * C],
                                     ['attn.c_proj', C, C],
                                     ['mlp.c_fc', C, 4 * C],
                                     ['mlp.c_proj', 4 * C, C]]) {
        const w = at.get(`h${l}.${name}.w`), bo = at.get(`h${l}.${name}.b`);
        const padded = q8PaddedMatrix(bytes, w, K, Nout);
        const bias = new Float32Array(bytes.slice(bo, bo + 4 * Nout).buffer);
        this.mats.set(w, {
          ew: q8ScaleMinExponent(bytes, w, K, Nout), eb: minExponent(bias),
          nout: padded.nout,
          bind: this.runner.bind(this.runner.upload(padded.data),
                                 this.runner.upload(new Uint8Array(bias.buffer))) });
      }
    }
    const head = q8PaddedMatrix(bytes, 0, C, c.n_vocab);
    if (head.data.byteLength > Math.min(limits.maxStorageBufferBindingSize,
                                        limits.maxBufferSize)) {
      throw new Error(`the int8 head (${head.data.byteLength} bytes) exceeds ` +
                      'this adapter\'s storage-buffer binding limit');
    }
    this.head = { ew: q8ScaleMinExponent(bytes, 0, C, c.n_vocab), eb: 256,
                  nout: head.nout,
                  bind: this.runner.bind(this.runner.upload(head.data), null) };
  }

  async project(session, r) {
    const t0 = performance.now();
    const m = r.head ? this.head : this.mats.get(r.w);
    if (!m) throw new Error(`no GPU int8 matrix at byte ${r.w}`);
    const mem = session.memory.buffer;
    const sx = new Float32Array(mem, r.sx, r.n * r.nIn / 64);
    if (this.guard && !subnormalFree(minExponent(sx), m.ew, m.eb)) {
      ++this.fallbacks;
      session.check(session.exports.web_project_cpu(), 'product');
    } else {
      await this.runner.run(m.bind, new Uint8Array(mem, r.qx, r.n * r.nIn), sx,
                            r.n, r.nIn, r.nOut, m.nout, !r.head,
                            new Uint8Array(mem, r.y, r.n * r.nOut * 4));
    }
    this.timeMs[r.which] += performance.now() - t0;
  }

  get submitMs() { return this.runner.submitMs; }
  get waitMs() { return this.runner.waitMs; }

  destroy() { this.runner.destroy(); }
}
