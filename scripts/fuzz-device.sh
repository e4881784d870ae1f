#!/usr/bin/env bash
# The long fuzz campaign of issue 13 (docs/fuzzing.md, "On another
# machine") on a machine with spare cores and no clang: the six libFuzzer
# harnesses are built here, linked so that they need only glibc, packed
# into .fuzzpack/ (ignored; it travels with the working tree), and run
# there by scripts/fuzz.sh --no-build, pinned with taskset.
#
# Usage:
#   scripts/fuzz-device.sh pack [--build DIR]
#       configure (if needed) and build DIR (default build-fuzz-dev) from
#       HEAD's sources (git archive into DIR/src) with clang-19, ASan +
#       UBSan, libstdc++/libgcc/OpenSSL/PCRE2 static;
#       check that the harnesses need only glibc; strip debug info (the
#       symbol table stays; DIR keeps the unstripped binaries, same code
#       addresses); write .fuzzpack/fuzz.tar.xz (binaries, seed corpus,
#       MANIFEST) and .fuzzpack/SHA256SUMS
#   scripts/fuzz-device.sh start --cores LIST --seconds S [--split SPEC]
#                                [--rates SPEC] [--nice N] OUTDIR
#       unpack .fuzzpack into /tmp/lockstep-fuzz, start the campaign in the
#       background and return at once. LIST: cores for taskset (2-15,
#       0,3,5-7). Everything ends S seconds after start (libFuzzer's
#       -max_total_time, then SIGTERM, then SIGKILL). With 6 cores or more
#       fuzz_gpt2_diff gets one core and the five parsers the rest, split
#       so that the smallest projected count (rate x cores x seconds) is as
#       large as possible; with fewer, every harness runs one worker on
#       all of LIST. --split safetensors=3,checkpoint=2,...,gpt2_diff=1
#       gives the cores by hand; --rates name=EXEC_PER_S,... replaces the
#       planning rates below. The plan is OUTDIR/campaign/plan.txt (the
#       campaign's state, fuzz.sh outputs and statuses sit beside it);
#       --dry-run writes and prints it, and starts nothing.
#   scripts/fuzz-device.sh wait OUTDIR
#       wait for the campaign, copy any crash-/leak-/timeout-/oom- inputs
#       into OUTDIR/campaign/crashes/ and the logs' heads and tails into
#       OUTDIR/campaign/logs/, write OUTDIR/summary.json and summary.txt,
#       the grown corpora into OUTDIR/corpus.tar.xz (kept up to 16 MiB),
#       then pack OUTDIR/campaign into OUTDIR/logs.tar.gz and remove it:
#       OUTDIR ends with those four files only (a device call returns at
#       most 8); exit 1 if any harness crashed or failed to run, else 0.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack=$root/.fuzzpack
work=/tmp/lockstep-fuzz
goal=10000000
parsers=(safetensors checkpoint gpt2_packed hf_config tokenizer)
all=(safetensors checkpoint gpt2_packed hf_config tokenizer gpt2_diff)

# Executions per second of one worker on one core, for the split: per CPU
# second (user + sys) on the development VM's AMD EPYC, the lowest of two
# windows of each harness (from the seeds, then from the grown corpus;
# docs/fuzzing.md, "The campaign on another machine").
declare -A rate=([safetensors]=10100 [checkpoint]=13200 [gpt2_packed]=9650
  [hf_config]=9650 [tokenizer]=1600 [gpt2_diff]=40)

die() {
  echo "fuzz-device.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | grep '^#' | cut -c3-
}

# "2-4,7" -> "2 3 4 7"
expand_cores() {
  local part acc=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
      acc+=($(seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"))
    elif [[ $part =~ ^[0-9]+$ ]]; then
      acc+=("$part")
    else
      die "bad core list '$1'"
    fi
  done
  echo "${acc[@]}"
}

cmd_pack() {
  local build=$root/build-fuzz-dev
  while [ $# -gt 0 ]; do
    case $1 in
      --build) build=$2; shift 2 ;;
      *) die "pack: unknown argument $1" ;;
    esac
  done
  case $build in /*) ;; *) build=$PWD/$build ;; esac
  command -v clang++-19 >/dev/null || die "pack needs clang-19 (scripts/setup.sh)"
  # The sources are HEAD's (git archive), not the working tree's: the pack
  # is a commit's code, whatever else is being edited in this checkout.
  local src=$build/src commit
  commit=$(git -C "$root" rev-parse HEAD)
  if [ "$(cat "$src/.lockstep-commit" 2>/dev/null)" != "$commit" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    git -C "$root" archive HEAD | tar -x -C "$src"
    echo "$commit" >"$src/.lockstep-commit"
  fi
  if [ -f "$build/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
    die "$build was configured from other sources: remove it, or pass --build"
  fi
  if [ ! -f "$build/build.ninja" ]; then
    # Static: libstdc++ and libgcc (linker flags), OpenSSL's libcrypto
    # (FindOpenSSL), PCRE2 (the pkg-config library path); ASan's and
    # UBSan's runtimes are static by clang's default (-static-libsan).
    local pcre
    pcre=$(pkg-config --variable=libdir libpcre2-8)/libpcre2-8.a
    [ -f "$pcre" ] || die "no $pcre (libpcre2-dev)"
    CC=clang-19 CXX=clang++-19 cmake -S "$src" -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WASM=OFF \
      -DLOCKSTEP_BENCHMARKS=OFF -DLOCKSTEP_CUDA=OFF -DLOCKSTEP_FUZZ=ON \
      -DOPENSSL_USE_STATIC_LIBS=TRUE -Dpkgcfg_lib_PCRE2_pcre2-8="$pcre" \
      "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ -static-libgcc" >/dev/null
  fi
  nice -n 10 ninja -C "$build" -j"$(nproc)" fuzz_all >/dev/null
  local stage h libs
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/corpus"
  for h in "${all[@]}"; do
    libs=$(ldd "$build/fuzz/fuzz_$h" | awk '{print $1}' |
      grep -v -E '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|lib(c|m|resolv|dl|pthread|rt|stdc\+\+|gcc_s)\.so)' || true)
    [ -z "$libs" ] || die "fuzz_$h needs libraries beyond glibc: $libs"
    objcopy --strip-debug "$build/fuzz/fuzz_$h" "$stage/bin/fuzz_$h"
    cp -r "$src/fuzz/corpus/fuzz_$h" "$stage/corpus/"
  done
  {
    echo "commit $commit"
    echo "built $(date -u +%FT%TZ) on $(uname -n)"
    echo "compiler $(clang++-19 --version | head -1)"
    echo "flags $(grep -E '^CMAKE_CXX_FLAGS_RELEASE:' "$build/CMakeCache.txt" | cut -d= -f2-)" \
      "-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
      "(debug info stripped; unstripped in $build/fuzz)"
    echo "glibc symbols up to $(objdump -T "$stage"/bin/* |
      grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    (cd "$stage/bin" && sha256sum fuzz_*)
  } >"$stage/MANIFEST"
  mkdir -p "$pack"
  tar -C "$stage" -cf - MANIFEST bin corpus | xz -9e -T"$(nproc)" \
    >"$pack/fuzz.tar.xz.tmp"
  mv "$pack/fuzz.tar.xz.tmp" "$pack/fuzz.tar.xz"
  (cd "$pack" && sha256sum fuzz.tar.xz >SHA256SUMS)
  rm -rf "$stage"
  grep -qx '/.fuzzpack/' "$root/.git/info/exclude" 2>/dev/null || {
    mkdir -p "$root/.git/info"
    echo '/.fuzzpack/' >>"$root/.git/info/exclude"
  }
  echo "fuzz-device.sh: $pack/fuzz.tar.xz: $(stat -c %s "$pack/fuzz.tar.xz") bytes"
}

unpack() {
  [ -f "$pack/fuzz.tar.xz" ] ||
    die "no $pack/fuzz.tar.xz: build it with 'bash scripts/fuzz-device.sh pack' (clang-19) and carry .fuzzpack"
  (cd "$pack" && sha256sum -c --quiet SHA256SUMS) ||
    die "$pack/fuzz.tar.xz does not match $pack/SHA256SUMS"
  rm -rf "$work"
  mkdir -p "$work"
  if command -v xz >/dev/null; then
    xz -dc "$pack/fuzz.tar.xz" | tar -C "$work" -xf -
  elif command -v python3 >/dev/null; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$pack/fuzz.tar.xz" "$work"
  else
    die "neither xz nor python3 here to unpack $pack/fuzz.tar.xz"
  fi
  # A mini source tree for scripts/fuzz.sh --no-build: its binaries in
  # build/fuzz, its seeds in fuzz/corpus (the pack's own).
  mkdir -p "$work/root/scripts" "$work/root/fuzz" "$work/root/build"
  cp "$root/scripts/fuzz.sh" "$work/root/scripts/"
  mv "$work/corpus" "$work/root/fuzz/corpus"
  mv "$work/bin" "$work/root/build/fuzz"
}

cmd_start() {
  local cores="" seconds="" split="" nice_n=0 out="" dry=0 h
  while [ $# -gt 0 ]; do
    case $1 in
      --cores) cores=$2; shift 2 ;;
      --seconds) seconds=$2; shift 2 ;;
      --split) split=$2; shift 2 ;;
      --rates) local r; IFS=, read -ra r <<<"$2"
        for kv in "${r[@]}"; do h=${kv%%=*}; rate[${h#fuzz_}]=${kv#*=}; done
        shift 2 ;;
      --nice) nice_n=$2; shift 2 ;;
      --dry-run) dry=1; shift ;;
      -*) die "start: unknown option $1" ;;
      *) out=$1; shift ;;
    esac
  done
  [ -n "$cores" ] && [ -n "$seconds" ] && [ -n "$out" ] ||
    die "usage: start --cores LIST --seconds S OUTDIR"
  [[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 30 ] ||
    die "--seconds must be a whole number of at least 30"
  local t0
  t0=$(date +%s)
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  # The campaign's own files (plan, state, each harness's fuzz.sh output
  # and status) live in OUTDIR/campaign until 'wait' packs them.
  local st=$out/campaign
  if [ -e "$st/pid" ] || [ -e "$out/summary.txt" ]; then
    die "$out already holds a campaign"
  fi
  mkdir -p "$st"
  [ -d "$root/data/gpt2" ] || die "no $root/data/gpt2 (the tokenizer's files)"
  [ "$dry" = 1 ] || unpack
  [[ $cores =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
    die "bad core list '$cores' (say 3-15 or 0,2,4-7)"
  local list=($(expand_cores "$cores"))
  [ "$dry" = 1 ] || taskset -c "$cores" true 2>/dev/null ||
    die "taskset cannot use cores $cores here ($(nproc --all) online)"
  local n=${#list[@]}
  # Each harness once on the empty input (the tokenizer loads its files):
  # a harness that cannot start here fails now, not after S seconds. An
  # unlimited stack with 31-32 bits of mmap entropy gives ASan (LLVM 19)
  # a memory layout it cannot use: the stack limit is made finite, and
  # if a harness still dies, it is retried with ASLR off (setarch -R).
  [ "$(ulimit -s)" != unlimited ] || ulimit -s 8192
  export LOCKSTEP_GPT2_DATA=$root/data/gpt2
  local pre=() smoke=$work/smoke
  mkdir -p "$smoke"
  if [ "$dry" = 0 ]; then
    for h in "${all[@]}"; do
      (cd "$smoke" && timeout 60 ${pre[@]+"${pre[@]}"} "$work/root/build/fuzz/fuzz_$h" \
        -runs=0 </dev/null >"$smoke/$h.log" 2>&1) && continue
      if [ ${#pre[@]} -eq 0 ] && setarch "$(uname -m)" -R true 2>/dev/null; then
        pre=(setarch "$(uname -m)" -R)
        (cd "$smoke" && timeout 60 ${pre[@]+"${pre[@]}"} "$work/root/build/fuzz/fuzz_$h" \
          -runs=0 </dev/null >"$smoke/$h.log" 2>&1) && continue
      fi
      tail -20 "$smoke/$h.log" >&2
      die "fuzz_$h does not run here (log above: $smoke/$h.log)"
    done
  fi
  # Leave 15 s for the unpacking above, the start of the workers, and
  # their exit (an input of the differential can take seconds).
  local fuzz_s=$((seconds - ($(date +%s) - t0) - 15))
  [ "$fuzz_s" -ge 10 ] || die "--seconds $seconds leaves no time to fuzz"
  declare -A want=() need=() met=()
  if [ -n "$split" ]; then
    IFS=, read -ra sp <<<"$split"
    for kv in "${sp[@]}"; do
      h=${kv%%=*}
      h=${h#fuzz_}
      [[ " ${all[*]} " == *" $h "* ]] || die "--split: no harness '$h'"
      want[$h]=${kv#*=}
    done
    local sum=0
    for h in "${all[@]}"; do sum=$((sum + ${want[$h]:-0})); done
    [ "$sum" -le "$n" ] || die "--split uses $sum cores, --cores has $n"
  elif [ "$n" -ge 6 ]; then
    # One core each, the differential's for good. Then the parsers that
    # need the fewest cores to pass the goal (with 10% to spare: the rate
    # falls as the corpus grows) get them, as many parsers as the cores
    # allow; each core still left goes to the parser, among those short of
    # the goal if any is, whose projection (rate x cores) is the smallest.
    for h in "${all[@]}"; do want[$h]=1; done
    for h in "${parsers[@]}"; do
      need[$h]=$(((goal * 11 / 10 + rate[$h] * fuzz_s - 1) / (rate[$h] * fuzz_s)))
    done
    local left=$((n - 6)) best p
    for h in $(for p in "${parsers[@]}"; do echo "${need[$p]} $p"; done |
      sort -n | cut -d' ' -f2); do
      if [ $((need[$h] - 1)) -le "$left" ]; then
        left=$((left - need[$h] + 1))
        want[$h]=${need[$h]}
        met[$h]=1
      fi
    done
    while [ "$left" -gt 0 ]; do
      best=""
      for h in "${parsers[@]}"; do
        [ ${#met[@]} -eq ${#parsers[@]} ] || [ -z "${met[$h]:-}" ] || continue
        if [ -z "$best" ] ||
          [ $((rate[$h] * want[$h])) -lt $((rate[$best] * want[$best])) ]; then
          best=$h
        fi
      done
      want[$best]=$((want[$best] + 1))
      left=$((left - 1))
    done
  fi
  {
    echo "cores $cores ($n): $(lscpu | sed -n 's/^Model name: *//p' | head -1)," \
      "$(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core"
    echo "seconds $seconds (libFuzzer -max_total_time=$fuzz_s)"
    printf '%-12s %6s %-14s %10s %14s\n' harness cores taskset "rate/core" projected
  } >"$st/plan.txt"
  local i=0 set
  declare -A cpus
  for h in "${all[@]}"; do
    if [ -n "$split" ] || [ "$n" -ge 6 ]; then
      [ "${want[$h]:-0}" -gt 0 ] || continue
      set=$(echo "${list[@]:$i:${want[$h]}}" | tr ' ' ,)
      i=$((i + want[$h]))
    else
      want[$h]=1
      set=$(echo "${list[@]}" | tr ' ' ,)
    fi
    cpus[$h]=$set
    printf '%-12s %6s %-14s %10s %14s\n' "$h" "${want[$h]}" "$set" \
      "${rate[$h]:-?}" "$(( ${rate[$h]:-0} * want[$h] * fuzz_s ))" >>"$st/plan.txt"
  done
  cat "$st/plan.txt"
  [ "$dry" = 0 ] || return 0
  {
    echo "started $(date -u +%FT%TZ) $t0"
    echo "seconds $seconds"
    echo "fuzz_seconds $fuzz_s"
    echo "cores $cores"
    echo "prefix ${pre[*]:-none}"
    for h in "${!cpus[@]}"; do echo "harness $h ${want[$h]} ${cpus[$h]}"; done
  } >"$st/info"
  # The campaign, detached: each harness is one scripts/fuzz.sh with its
  # workers, pinned to its cores; a hard wall-clock stop behind
  # libFuzzer's own limit.
  (
    for h in "${!cpus[@]}"; do
      (
        rc=0
        timeout -s TERM -k 5 $((fuzz_s + 8)) \
          nice -n "$nice_n" taskset -c "${cpus[$h]}" ${pre[@]+"${pre[@]}"} \
          bash "$work/root/scripts/fuzz.sh" --no-build \
          --build "$work/root/build" --out "$work/out" \
          --seconds "$fuzz_s" --workers "${want[$h]}" "fuzz_$h" \
          >"$st/fuzz.sh.$h.txt" 2>&1 || rc=$?
        echo "$rc" >"$st/rc.$h"
      ) &
    done
    wait
    echo "ended $(date -u +%FT%TZ) $(date +%s)" >>"$st/info"
  ) </dev/null >/dev/null 2>&1 &
  echo $! >"$st/pid"
  echo "fuzz-device.sh: campaign started (pid $!), ends within $seconds s; then: bash scripts/fuzz-device.sh wait $out"
}

json_str() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

cmd_wait() {
  [ $# -eq 1 ] || die "usage: wait OUTDIR"
  local out=$1
  if [ -f "$out/summary.txt" ] && [ ! -e "$out/campaign" ]; then
    die "$out was collected already: summary.txt, logs.tar.gz"
  fi
  [ -f "$out/campaign/pid" ] || die "no campaign in $out (start one first)"
  out=$(cd "$out" && pwd)
  local st=$out/campaign info=$out/campaign/info pid
  pid=$(cat "$st/pid")
  while kill -0 "$pid" 2>/dev/null; do sleep 2; done
  local t0 t1 secs
  t0=$(awk '/^started/{print $3}' "$info")
  t1=$(awk '/^ended/{print $3}' "$info")
  [ -n "$t1" ] || t1=$(date +%s)
  secs=$(awk '/^seconds/{print $2}' "$info")
  local fuzz_s
  fuzz_s=$(awk '/^fuzz_seconds/{print $2}' "$info")
  local model
  model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
  local status=0 h rows="" txt=""
  mkdir -p "$st/crashes" "$st/logs"
  declare -A sha
  while read -r s f; do sha[${f#fuzz_}]=$s; done < <(cd "$work/root/build/fuzz" && sha256sum fuzz_*)
  while read -r _ h w cpuset; do
    local dir=$work/out/fuzz_$h execs=0 lrate=0 note="" e r log nlog=0
    for log in "$dir"/log.*; do
      [ -f "$log" ] || continue
      nlog=$((nlog + 1))
      e=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
        grep -o '[0-9]*$' | tail -1 || true)
      r=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" |
        grep -o '[0-9]*$' | tail -1 || true)
      if [ -z "$e" ]; then
        e=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1 || true)
        note="a worker stopped without final stats (campaign/logs/fuzz_$h.${log##*.})"
      fi
      execs=$((execs + ${e:-0}))
      lrate=$((lrate + ${r:-0}))
      # The log's head (flags, seeds) and tail (stats or the report).
      { head -40 "$log"; echo ...; tail -200 "$log"; } >"$st/logs/fuzz_$h.${log##*.}"
    done
    [ "$nlog" -gt 0 ] || note="no worker ran (see campaign/fuzz.sh.$h.txt)"
    local list=() c
    if [ -d "$dir/crashes" ]; then
      while IFS= read -r c; do
        list+=("$(basename "$c")")
        cp "$c" "$st/crashes/fuzz_$h.$(basename "$c")"
      done < <(find "$dir/crashes" -type f \( -name 'crash-*' -o \
        -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
    fi
    local n=${#list[@]} rc
    rc=$(cat "$st/rc.$h" 2>/dev/null || echo missing)
    [ "$n" -eq 0 ] || note="crash inputs in campaign/crashes/fuzz_$h.*"
    if [ "$n" -ne 0 ] || [ "$nlog" -eq 0 ] || [ "$rc" != 0 ]; then status=1; fi
    local goal_ok=false
    [ "$execs" -lt "$goal" ] || goal_ok=true
    local rate_s=$((execs / fuzz_s))
    local names="" x
    for x in "${list[@]}"; do names+="${names:+, }$(json_str "$x")"; done
    rows+="${rows:+,
}    {\"harness\": \"fuzz_$h\", \"workers\": $w, \"cpus\": \"$cpuset\", \"executions\": $execs, \"exec_per_s\": $rate_s, \"libfuzzer_exec_per_s_sum\": $lrate, \"crashes\": $n, \"crash_files\": [$names], \"fuzz_sh_status\": \"$rc\", \"reached_10M\": $goal_ok, \"sha256\": \"${sha[$h]:-}\", \"note\": $(json_str "$note")}"
    txt+=$(printf '%-18s %7s %-10s %13s %9s %7s %s' "fuzz_$h" "$w" \
      "$cpuset" "$execs" "$rate_s" "$n" "$note")$'\n'
  done < <(grep '^harness ' "$info" |
    awk '{o=index("safetensors checkpoint gpt2_packed hf_config tokenizer gpt2_diff", $2); print o, $0}' |
    sort -n | cut -d' ' -f2-)
  # The corpora the workers grew (to start a later campaign from):
  # compressed, and left out if over 16 MiB (the most a device call
  # returns in one file).
  if tar -C "$work/out" -cf - --exclude=crashes --exclude='log.*' . 2>/dev/null |
    xz -6 -T0 >"$out/corpus.tar.xz.tmp" &&
    [ "$(stat -c %s "$out/corpus.tar.xz.tmp")" -le $((16 << 20)) ]; then
    mv "$out/corpus.tar.xz.tmp" "$out/corpus.tar.xz"
  else
    rm -f "$out/corpus.tar.xz.tmp"
  fi
  local manifest_commit
  manifest_commit=$(awk '/^commit/{$1=""; print substr($0,2)}' "$work/MANIFEST")
  cat >"$out/summary.json" <<EOF
{
  "machine": {"cpu": $(json_str "$model"), "threads_per_core": $(json_str "$(lscpu | sed -n 's/^Thread(s) per core: *//p')"), "cpus_online": $(nproc --all), "host": $(json_str "$(uname -n)"), "kernel": $(json_str "$(uname -r)")},
  "cores": "$(awk '/^cores/{print $2}' "$info")",
  "launcher_prefix": $(json_str "$(awk '/^prefix/{$1=""; print substr($0,2)}' "$info")"),
  "seconds_requested": $secs,
  "wall_seconds": $((t1 - t0)),
  "fuzz_seconds": $fuzz_s,
  "started_utc": "$(awk '/^started/{print $2}' "$info")",
  "build": $(json_str "$manifest_commit"),
  "pack_sha256": "$(cut -d' ' -f1 "$pack/SHA256SUMS")",
  "goal_executions": $goal,
  "harnesses": [
$rows
  ],
  "status": $( [ $status = 0 ] && echo '"ok: 0 crashes"' || echo '"FAILED: crashes or a harness that did not run"')
}
EOF
  {
    echo "fuzz campaign: $model, cores $(awk '/^cores/{print $2}' "$info"), $((t1 - t0)) s of $secs (started $(awk '/^started/{print $2}' "$info"))"
    echo "build: $manifest_commit"
    printf '%-18s %7s %-10s %13s %9s %7s %s\n' harness workers cpus executions exec/s crashes note
    printf '%s' "$txt"
    echo "sha256:"
    (cd "$work/root/build/fuzz" && sha256sum fuzz_*)
    echo "logs: logs.tar.gz (campaign/: plan.txt, info, fuzz.sh.*.txt, rc.*, logs/, crashes/)"
    if [ -f "$out/corpus.tar.xz" ]; then
      echo "corpus: corpus.tar.xz"
    else
      echo "corpus: not kept (over 16 MiB compressed, or no xz)"
    fi
  } >"$out/summary.txt"
  # A device call returns at most 8 files: all but the two summaries and
  # the corpus goes into one tarball; its folder is removed only once the
  # tarball is whole.
  tar -C "$out" -czf "$out/logs.tar.gz.tmp" campaign
  mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
  rm -rf "$st"
  cat "$out/summary.txt"
  return $status
}

[ $# -gt 0 ] || { usage; exit 2; }
sub=$1
shift
case $sub in
  pack) cmd_pack "$@" ;;
  start) cmd_start "$@" ;;
  wait) cmd_wait "$@" ;;
  -h|--help) usage ;;
  *) die "unknown command $sub (pack, start or wait)" ;;
esac
