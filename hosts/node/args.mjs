// A small parser for the native CLI's flags (cli/*.cc): --name VALUE,
// --name=VALUE, short aliases, boolean flags. Unknown or repeated options
// and missing values are errors.
import { statSync } from 'node:fs';
import { HostError } from './module.mjs';

// spec: { name: { alias: '-x', flag: true, def: value } }
export function parseArgs(argv, spec, command) {
  const byName = new Map();
  for (const [name, s] of Object.entries(spec)) {
    byName.set('--' + name, name);
    if (s.alias) byName.set(s.alias, name);
  }
  const out = {};
  const seen = new Set();
  for (const [name, s] of Object.entries(spec)) {
    if ('def' in s) out[name] = s.def;
    else if (s.flag) out[name] = false;
  }
  for (let i = 0; i < argv.length; ++i) {
    let arg = argv[i];
    let value;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    if (eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const name = byName.get(arg);
    if (!name) {
      throw new HostError(`${command}: unknown option '${argv[i]}' (see ` +
                          `lockstep ${command} --help)`);
    }
    if (seen.has(name)) throw new HostError(`${command}: ${arg} given twice`);
    seen.add(name);
    if (spec[name].flag) {
      if (value !== undefined) {
        throw new HostError(`${command}: ${arg} takes no value`);
      }
      out[name] = true;
      continue;
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) {
        throw new HostError(`${command}: ${arg} needs a value`);
      }
      value = argv[++i];
    }
    out[name] = value;
  }
  out.given = seen;
  return out;
}

export function intOption(v, name, lo, hi) {
  if (typeof v === 'number') return v;
  if (!/^[+-]?\d+$/.test(v) || Number(v) < lo || Number(v) > hi) {
    throw new HostError(`${name}: '${v}' is not an integer in [${lo}, ${hi}]`);
  }
  return Number(v);
}

export function numberOption(v, name) {
  if (typeof v === 'number') return v;
  const x = Number(v);
  if (v.trim() === '' || Number.isNaN(x) && v.trim().toLowerCase() !== 'nan') {
    throw new HostError(`${name}: '${v}' is not a number`);
  }
  return x;
}

// "1,2,3" as the native parse_token_list reads it (docs/cli.md): ID(,ID)*,
// ID = -?[0-9]+ within int32; no spaces, no empty item, no trailing comma.
export function parseTokenList(list) {
  if (list === '') return [];
  return list.split(',').map((item, i) => {
    if (!/^-?\d{1,10}$/.test(item) || Number(item) < -0x80000000 ||
        Number(item) > 0x7fffffff) {
      throw new HostError(`--tokens: item ${i + 1} '${item}' is not an ` +
                          'integer (expected ids separated by single ' +
                          'commas, no spaces, such as 84,111,32,98)');
    }
    return Number(item);
  });
}

// The native CLI's --seed check (cli/model_args.cc unsigned64): decimal
// digits only, at most 2^64 - 1.
export function seedOption(v) {
  if (!/^\d{1,20}$/.test(v) || BigInt(v) >= 1n << 64n) {
    throw new HostError(`--seed: '${v}' is not an integer in ` +
                        '[0, 18446744073709551615] (decimal digits only)');
  }
  return BigInt(v);
}

// The native CLI's --bound check: a number in [0, 10] (NaN is not).
export function boundOption(v) {
  const x = typeof v === 'number' ? v : Number(v);
  if (typeof v !== 'number' && v.trim() === '' || !(x >= 0 && x <= 10)) {
    throw new HostError(`--bound: weight bound B must be a number in ` +
                        `[0, 10] (got '${v}')`);
  }
  return x;
}

// A file the host reads (a checkpoint, the module): a clear message when it
// is missing or is a folder, instead of Node's exception.
export function regularFile(path, what) {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    throw new HostError(`${what} '${path}': ${e.code === 'ENOENT'
        ? 'no such file' : e.message}`);
  }
  if (st.isDirectory()) {
    throw new HostError(`${what} '${path}' is a folder, not a file`);
  }
  return path;
}

// --help for a command: its options from the spec.
export function usage(command, spec, summary) {
  const lines = [`usage: node hosts/node/lockstep.mjs ${command} [options]`,
                 summary, '', 'options:'];
  for (const [name, s] of Object.entries(spec)) {
    const head = `  --${name}${s.alias ? ', ' + s.alias : ''}` +
                 (s.flag ? '' : ' VALUE');
    const def = 'def' in s ? ` (default ${s.def})` : '';
    lines.push(`${head.padEnd(28)} ${s.help || ''}${def}`);
  }
  lines.push('  --help, -h                   this text');
  return lines.join('\n') + '\n';
}
