// A WebAssembly binary's import section, read without instantiating it:
// plain ES, shared by the Node.js host (hosts/node/module.mjs) and the page.

// The minimum pages of the imported memory, read from the import section,
// so the planning instance gets exactly what the module declares.
function importedMemoryMinimum(bytes) {
  let p = 8;
  const u32 = () => {
    let v = 0, shift = 0, b;
    do {
      b = bytes[p++];
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return v;
  };
  while (p < bytes.length) {
    const id = bytes[p++];
    const size = u32();
    const end = p + size;
    if (id === 2) {
      const count = u32();
      for (let i = 0; i < count; ++i) {
        // (`p += u32()` would read p before u32() advances it.)
        const moduleName = u32();
        p += moduleName;
        const fieldName = u32();
        p += fieldName;
        const kind = bytes[p++];
        if (kind !== 2) break;
        const flags = bytes[p++];
        const min = u32();
        if (flags & 1) u32();
        return min;
      }
    }
    p = end;
  }
  return null;  // no imported memory: the caller says so in its own error
}

// The same, with a missing memory import reported as the caller's error.
export function memoryMinimum(bytes, ErrorClass) {
  const min = importedMemoryMinimum(bytes);
  if (min === null) throw new ErrorClass('the module imports no memory');
  return min;
}
