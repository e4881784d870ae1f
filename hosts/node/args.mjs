// A small parser for the native CLI's flags (cli/*.cc): --name VALUE,
// --name=VALUE, short aliases, boolean flags. Unknown or repeated options
// and missing values are errors.
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

// "1,2,3" as the native parse_token_list reads it.
export function parseTokenList(list) {
  if (list === '') return [];
  return list.split(',').map((item) => {
    if (!/^\s*[+-]?\d+$/.test(item) || Number(item) < -0x80000000 ||
        Number(item) > 0x7fffffff) {
      throw new HostError(`--tokens: '${item}' is not an integer (expected ` +
                          'a comma-separated list such as 84,111,32,98)');
    }
    return Number(item);
  });
}
