// Output helpers that print what the native CLI prints: C's %a for a
// binary64 (glibc's form), and bytes as a C string literal would show them.

// glibc's printf("%a", v) for a finite binary64.
export function hexFloat(v) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  const hi = view.getUint32(0), lo = view.getUint32(4);
  const sign = hi >>> 31 ? '-' : '';
  const exp = (hi >>> 20) & 0x7ff;
  const frac = ((hi & 0xfffff).toString(16).padStart(5, '0') +
                lo.toString(16).padStart(8, '0')).replace(/0+$/, '');
  if (exp === 0 && frac === '') return `${sign}0x0p+0`;
  const lead = exp === 0 ? '0' : '1';
  const e = exp === 0 ? -1022 : exp - 1023;
  return `${sign}0x${lead}${frac ? '.' + frac : ''}p${e < 0 ? '-' : '+'}` +
         `${Math.abs(e)}`;
}

// A byte as in a C string literal (cli/cmd_generate.cc show_byte).
export function showByte(b) {
  if (b === 10) return '\\n';
  if (b === 9) return '\\t';
  if (b === 39) return "\\'";
  if (b === 92) return '\\\\';
  if (b >= 32 && b < 127) return String.fromCharCode(b);
  return '\\x' + b.toString(16).padStart(2, '0');
}

export function showBytes(bytes) {
  let s = '';
  for (const b of bytes) s += showByte(b);
  return s;
}

// A finite binary64 as nlohmann::json writes it (shortest round-trip digits
// placed by its format_buffer): "10.0", "0.001", "1e-05", "1.5e+20".
export function jsonNumber(x) {
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  const [mant, e] = Math.abs(x).toExponential().split('e');
  const digits = mant.replace('.', '');
  const k = digits.length;
  const n = Number(e) + 1;  // position of the decimal point
  let s;
  if (k <= n && n <= 15) {
    s = digits + '0'.repeat(n - k) + '.0';
  } else if (n > 0 && n <= 15) {
    s = digits.slice(0, n) + '.' + digits.slice(n);
  } else if (n > -4 && n <= 0) {
    s = '0.' + '0'.repeat(-n) + digits;
  } else {
    const m = k === 1 ? digits : digits[0] + '.' + digits.slice(1);
    const ex = n - 1;
    s = m + 'e' + (ex < 0 ? '-' : '+') + String(Math.abs(ex)).padStart(2, '0');
  }
  return sign + s;
}
