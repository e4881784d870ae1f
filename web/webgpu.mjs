// WebGPU for lockstep (docs/browser.md): WGSL kernels for GPT-2's matrix
// products in the order of docs/arithmetic.md §2.1/§2.2, and the start-up
// probes that say whether this adapter fuses a*b+c, reassociates sums or
// flushes subnormals (WGSL permits all three).
//
// The product kernel: one invocation per (position t, output o). For K a
// multiple of 16, 16 contiguous blocks of L = K/16 terms, each summed from
// +0.0 in increasing k; the block sums combined by the halving tree (h = 8,
// 4, 2, 1: s[i] = s[i] + s[i+h]); the bias added last. Otherwise one
// sequential sum from +0.0. The output head reads wte row-major (logits[v]
// = dot(h, wte[v]), no bias). Every product's bits pass through an integer
// XOR with a uniform that is 0 at run time but unknown to the compiler, so
// the product must be rounded to binary32 before the add: no compiler can
// contract it into a fused multiply-add.

const KERNEL = /* wgsl */ `
// check: set where the probes found subnormals flushed. Every operand and
// result is then tested on its bits (integer operations, which no
// flush-to-zero mode touches): a subnormal operand or result, a product of
// nonzero factors that came out zero, or a sum that came out zero without
// its terms being exact negatives (or both zero) sets flag[0], and the host
// computes that product in WebAssembly instead. (IEEE gives a subnormal
// there, or a zero the check cannot tell from a flushed one.)
override check: bool = true;
struct Params {
  n: u32,      // positions
  k: u32,      // inputs per position
  nout: u32,   // outputs (this dispatch)
  mode: u32,   // bit 0: add the bias; bit 1: W row-major [nout, k] (head)
  zero: u32,   // 0, unknown to the compiler
  pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> flag: array<atomic<u32>>;

var<private> bad: bool = false;

fn mag(v: f32) -> u32 { return bitcast<u32>(v) & 0x7fffffffu; }
fn subnormal(m: u32) -> bool { return m != 0u && m < 0x00800000u; }

// a * c rounded to binary32 on its own (see the file's comment).
fn prod(a: f32, c: f32) -> f32 {
  let r = bitcast<f32>(bitcast<u32>(a * c) ^ p.zero);
  if (check) {
    let ma = mag(a); let mc = mag(c); let mr = mag(r);
    if (subnormal(ma) || subnormal(mc) || subnormal(mr) ||
        (mr == 0u && ma != 0u && mc != 0u)) { bad = true; }
  }
  return r;
}

fn add(a: f32, c: f32) -> f32 {
  let r = a + c;
  if (check) {
    let ua = bitcast<u32>(a); let uc = bitcast<u32>(c); let mr = mag(r);
    let exact_zero = ua == (uc ^ 0x80000000u) ||
                     ((ua & 0x7fffffffu) == 0u && (uc & 0x7fffffffu) == 0u);
    if (subnormal(mr) || (mr == 0u && !exact_zero)) { bad = true; }
  }
  return r;
}

fn weight(k: u32, o: u32) -> f32 {
  if ((p.mode & 2u) != 0u) { return w[o * p.k + k]; }
  return w[k * p.nout + o];
}

@compute @workgroup_size(64)
fn matmul(@builtin(global_invocation_id) gid: vec3<u32>) {
  let o = gid.x;
  let t = gid.y;
  if (o >= p.nout || t >= p.n) { return; }
  let xo = t * p.k;
  var r: f32;
  if (p.k % 16u == 0u) {
    var s: array<f32, 16>;
    let L = p.k / 16u;
    for (var blk = 0u; blk < 16u; blk = blk + 1u) {
      var acc = 0.0f;
      let k0 = blk * L;
      for (var i = 0u; i < L; i = i + 1u) {
        acc = add(acc, prod(x[xo + k0 + i], weight(k0 + i, o)));
      }
      s[blk] = acc;
    }
    for (var h = 8u; h > 0u; h = h / 2u) {
      for (var i = 0u; i < h; i = i + 1u) {
        s[i] = add(s[i], s[i + h]);
      }
    }
    r = s[0];
  } else {
    var acc = 0.0f;
    for (var k = 0u; k < p.k; k = k + 1u) {
      acc = add(acc, prod(x[xo + k], weight(k, o)));
    }
    r = acc;
  }
  if ((p.mode & 1u) != 0u) { r = add(r, b[o]); }
  y[t * p.nout + o] = r;
  if (bad) { atomicStore(&flag[0], 1u); }
}
`;

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
  return { adapter, device, description: describe || '(no adapter info)',
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

// §2.1/§2.2 in JavaScript: each binary32 operation as Math.fround of the
// binary64 result, which is the binary32 result (binary64 has more than
// 2 * 24 + 2 bits, so + - * of binary32 values round once, correctly).
function referenceMatmul(x, w, b, n, K, N, head) {
  const f = Math.fround;
  const y = new Float32Array(n * N);
  for (let t = 0; t < n; ++t) {
    for (let o = 0; o < N; ++o) {
      const wt = (k) => (head ? w[o * K + k] : w[k * N + o]);
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
// two normal products), which must raise the flag. Returns rows for the
// page's table.
export async function kernelSelfTest(device, check) {
  const pipeline = device.createComputePipeline({
    layout: 'auto',
    compute: { module: device.createShaderModule({ code: KERNEL }),
               entryPoint: 'matmul', constants: { check: check ? 1 : 0 } } });
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
    { name: '2 positions, K 5 (sequential), 3 outputs', n: 2, K: 5, N: 3 },
    { name: 'head: K 32, 40 rows', n: 1, K: 32, N: 40, head: true },
    { name: 'a subnormal product', n: 1, K: 16, N: 1, sub: 'product' },
    { name: 'a subnormal sum of normal products', n: 1, K: 2, N: 1,
      sub: 'sum' },
  ];
  const rows = [];
  for (const c of cases) {
    let x = fill(c.n * c.K), w = fill(c.K * c.N);
    let b = c.head ? null : fill(c.N);
    if (c.sub === 'product') {
      x = new Float32Array(16).fill(2 ** -70);
      w = new Float32Array(16).fill(2 ** -70);
      b = new Float32Array(1);
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
    const u = buf(new Uint32Array([c.n, c.K, c.N, c.head ? 2 : b ? 1 : 0, 0,
                                   0, 0, 0]), GPUBufferUsage.UNIFORM);
    const bx = buf(x, S), bw = buf(w, S), bb = buf(b ?? new Float32Array(4), S);
    const by = buf(new Float32Array(c.n * c.N), S | GPUBufferUsage.COPY_SRC);
    const bf = buf(new Uint32Array(4), S | GPUBufferUsage.COPY_SRC);
    const bind = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [u, bx, bw, bb, by, bf].map((g, i) => (
        { binding: i, resource: { buffer: g } })) });
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind);
    pass.dispatchWorkgroups(Math.ceil(c.N / 64), c.n);
    pass.end();
    device.queue.submit([enc.finish()]);
    const y = new Float32Array((await readBack(device, by, c.n * c.N * 4))
                                   .buffer);
    const flag = new Uint32Array((await readBack(device, bf, 16)).buffer)[0];
    const want = referenceMatmul(x, w, b, c.n, c.K, c.N, !!c.head);
    const yu = new Uint32Array(y.buffer), wu = new Uint32Array(want.buffer);
    let diff = -1;
    for (let i = 0; i < yu.length; ++i) if (yu[i] !== wu[i]) { diff = i; break; }
    const h = (v) => '0x' + v.toString(16).padStart(8, '0');
    let ok, got;
    if (c.sub) {
      ok = !check || flag === 1;
      got = `flag ${flag}; ` + (diff < 0 ? 'the GPU result is IEEE\'s'
          : `the GPU gave ${h(yu[diff])}, IEEE ${h(wu[diff])}`) +
          (flag ? ' (recomputed in WebAssembly)' : '');
    } else {
      ok = diff < 0 && flag === 0;
      got = diff < 0 ? `${yu.length} outputs equal, flag ${flag}`
          : `output ${diff}: ${h(yu[diff])} vs ${h(wu[diff])}`;
    }
    rows.push({ name: `kernel: ${c.name}`, ok, got,
                want: c.sub ? 'flag 1' : 'equal to Math.fround reference' });
    for (const g of [u, bx, bw, bb, by, bf]) g.destroy();
  }
  return rows;
}

// The projector of a WebSession (web/lockstep-web.mjs): every block matrix
// and bias uploaded once from the session's plain-layout weights, wte in
// row chunks that fit the binding limit; each product is one dispatch and
// one read-back into the session's memory.
export class GpuProjector {
  // check: test every operand and result for subnormals (the adapter
  // flushes them; see the kernel), computing a flagged product in
  // WebAssembly.
  constructor(device, session, limits, check = true) {
    this.device = device;
    this.session = session;
    this.check = check;
    this.fallbacks = 0;
    this.pipeline = device.createComputePipeline({
      layout: 'auto',
      compute: { module: device.createShaderModule({ code: KERNEL }),
                 entryPoint: 'matmul', constants: { check: check ? 1 : 0 } } });
    const c = session.config, C = c.n_embd;
    const w = session.weights();
    this.buffers = [];
    const upload = (offset, words) => {
      const buf = device.createBuffer({
        size: Math.max(16, words * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buf, 0, w.buffer, w.byteOffset + offset * 4,
                               words * 4);
      this.buffers.push(buf);
      return buf;
    };
    const N = session.plan.maxPrefix;
    const maxIO = Math.ceil(Math.max(N * 4 * C, c.n_vocab) / 2) * 2;
    const io = (usage) => device.createBuffer({ size: maxIO * 4, usage });
    this.x = io(GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST);
    this.y = io(GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    this.read = device.createBuffer({
      size: maxIO * 4 + 16,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    this.maxIO = maxIO;
    this.flag = device.createBuffer({
      size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC |
                       GPUBufferUsage.COPY_DST });
    this.uniform = device.createBuffer({
      size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.none = device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
    // Block matrices by their word offset (the controller's request.w).
    this.mats = new Map();
    const dims = (l) => {
      const V = c.n_vocab, T = c.n_ctx;
      const B = V * C + T * C + l * (12 * C * C + 13 * C);
      return [[B + 2 * C, C, 3 * C], [B + 5 * C + 3 * C * C, C, C],
              [B + 8 * C + 4 * C * C, C, 4 * C],
              [B + 12 * C + 8 * C * C, 4 * C, C]];
    };
    for (let l = 0; l < c.n_layer; ++l) {
      for (const [off, K, Nout] of dims(l)) {
        const wb = upload(off, K * Nout);
        const bb = upload(off + K * Nout, Nout);
        this.mats.set(off, [{ w: wb, b: bb, row0: 0, rows: Nout,
                              bind: this.bind(wb, bb) }]);
      }
    }
    // The head: wte rows in chunks within the binding limit.
    const maxRows = Math.max(1, Math.floor(
        Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) /
        (4 * C)));
    const chunks = [];
    for (let r0 = 0; r0 < c.n_vocab; r0 += maxRows) {
      const rows = Math.min(maxRows, c.n_vocab - r0);
      const wb = upload(r0 * C, rows * C);
      chunks.push({ w: wb, b: this.none, row0: r0, rows,
                    bind: this.bind(wb, this.none) });
    }
    this.head = chunks;
    this.headChunks = chunks.length;
  }

  bind(wb, bb) {
    return this.device.createBindGroup({
      layout: this.pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: this.uniform } },
                { binding: 1, resource: { buffer: this.x } },
                { binding: 2, resource: { buffer: wb } },
                { binding: 3, resource: { buffer: bb } },
                { binding: 4, resource: { buffer: this.y } },
                { binding: 5, resource: { buffer: this.flag } }] });
  }

  // request: web/lockstep-web.mjs's pending product.
  async project(session, r) {
    const dev = this.device;
    const mem = session.memory.buffer;
    const parts = r.head ? this.head : this.mats.get(r.w);
    if (!parts) throw new Error(`no GPU matrix at word ${r.w}`);
    dev.queue.writeBuffer(this.x, 0, mem, r.x, r.n * r.nIn * 4);
    dev.queue.writeBuffer(this.flag, 0, new Uint32Array(4));
    const outWords = r.n * r.nOut;
    for (const part of parts) {
      const u = new Uint32Array([r.n, r.nIn, part.rows, r.head ? 2 : 1, 0,
                                 0, 0, 0]);
      dev.queue.writeBuffer(this.uniform, 0, u);
      const enc = dev.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(this.pipeline);
      pass.setBindGroup(0, part.bind);
      pass.dispatchWorkgroups(Math.ceil(part.rows / 64), r.n);
      pass.end();
      // A head chunk's rows go to their place in the logits (n = 1).
      enc.copyBufferToBuffer(this.y, 0, this.read, part.row0 * 4,
                             part.rows * r.n * 4);
      dev.queue.submit([enc.finish()]);
    }
    const fl = this.maxIO * 4;
    const enc = dev.createCommandEncoder();
    enc.copyBufferToBuffer(this.flag, 0, this.read, fl, 16);
    dev.queue.submit([enc.finish()]);
    await this.read.mapAsync(GPUMapMode.READ);
    const flagged = new Uint32Array(this.read.getMappedRange(fl, 16))[0] !== 0;
    if (!flagged) {
      new Uint8Array(mem, r.y, outWords * 4)
          .set(new Uint8Array(this.read.getMappedRange(0, outWords * 4)));
    }
    this.read.unmap();
    if (flagged) {
      // A subnormal, or a zero that may be a flushed one: WebAssembly
      // computes this product (the same §2.2 order, IEEE subnormals).
      ++this.fallbacks;
      session.check(session.exports.web_project_cpu(), 'product');
    }
  }

  destroy() {
    for (const b of [...this.buffers, this.x, this.y, this.read, this.uniform,
                     this.none, this.flag]) {
      b.destroy();
    }
  }
}
