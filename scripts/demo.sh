#!/usr/bin/env bash
# The newcomer's first command: set up, build, and run lockstep on the
# shipped tiny Shakespeare models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo
echo '$ build/lockstep generate --model tiny4 --text "To b"'
build/lockstep generate --model tiny4 --text 'To b'
echo
echo '$ build/lockstep generate --model tiny128 --text "ROMEO:" --generate 200 --top-k 10 --seed 1'
build/lockstep generate --model tiny128 --text 'ROMEO:' --generate 200 --top-k 10 --seed 1
echo
echo '$ build/lockstep info --model tiny128'
build/lockstep info --model tiny128
