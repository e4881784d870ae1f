#!/usr/bin/env bash
# The independent numpy int8 model (tools/independent/gpt2_q8_numpy.py,
# docs/independent-check.md) against lockstep, bit for bit: the int8
# payload of `lockstep convert --quant int8`, every logit of 128 contexts
# (`lockstep logits --all-positions`) and the KV cache (the core's
# ls_gpt2_q8_prefill through ctypes, from CORE_LIB); "fixtures" also shows
# that five deliberate deviations from the spec are seen and five damaged
# int8 files refused (--mutations).
# Usage: q8_numpy_test.sh LOCKSTEP_BINARY REPO_ROOT CORE_LIB fixtures|124m
set -u
bin=$1
root=$2
lib=$3
what=$4
py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null ||
  { echo "q8_numpy: $py has no numpy: apt-get install python3-numpy (scripts/setup.sh)"; exit 1; }
case "$what" in
  fixtures)
    exec "$py" "$root/tools/independent/gpt2_q8_numpy.py" --lockstep "$bin" \
      --core-lib "$lib" --hf "$root/tests/data/hf-gpt2-A" \
      --hf "$root/models/shakespeare-gpt2" --mutations ;;
  124m)
    exec "$py" "$root/tools/independent/gpt2_q8_numpy.py" --lockstep "$bin" \
      --core-lib "$lib" --random-124m ;;
  *)
    echo "q8_numpy_test.sh: unknown set '$what' (fixtures or 124m)"
    exit 2 ;;
esac
