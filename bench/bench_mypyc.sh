#!/usr/bin/env bash
# What would a mypyc-compiled simulation core buy on task5 through gym.make?
#
# Builds a compiled copy of HEAD in a temporary directory (the checkout stays pure Python), then
# runs bench/bench_gym.py on the pure checkout and on the compiled copy in interleaved rounds,
# because this host's speed swings up to ~1.8x between runs. Needs gcc and Python headers;
# mypy (which ships mypyc) and setuptools are added for this run only through `uv run --with`.
#
#   bash bench/bench_mypyc.sh [ROUNDS]        (default 3; the build takes ~2.5 min on one core)
#
# Compiled: the simulation core's hot modules. Not compiled: tasks.py (a compiled frozen dataclass
# cannot be unpickled), actions.py (pydantic models), render.py, the package __init__ and the
# Gymnasium adapter (its classes subclass gymnasium's). Forking (pickle of World/CodeRedSim) does
# not work compiled, so the compiled copy is for this measurement only.
set -euo pipefail
rounds="${1:-3}"
root="$(git rev-parse --show-toplevel)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

git -C "$root" archive HEAD | tar -x -C "$work"
modules=(world rubric observation handlers triage conditions city types env fork generator params)
sources=("${modules[@]/#/codered_env/sim/}")
sources=("${sources[@]/%/.py}")

echo "== building ${#sources[@]} modules with mypyc in $work"
start=$(date +%s)
# setuptools refuses the flat layout while pyproject.toml is present; mypyc needs no project metadata.
mv "$work/pyproject.toml" "$work/pyproject.toml.off"
(cd "$work" && uv run --project "$root" --with mypy --with setuptools mypyc \
    --disable-error-code union-attr --disable-error-code arg-type --disable-error-code operator \
    --disable-error-code misc --disable-error-code valid-type "${sources[@]}" >"$work/build.log" 2>&1) \
    || { tail -30 "$work/build.log"; exit 1; }
mv "$work/pyproject.toml.off" "$work/pyproject.toml"
echo "built in $(( $(date +%s) - start )) s: $(find "$work" -name '*.so' | wc -l) extension modules"

python_bin="$(cd "$root" && uv run python -c 'import sys; print(sys.executable)')"
for r in $(seq 1 "$rounds"); do
  echo "== round $r $(date -u +%T) $(uptime | sed 's/.*load/load/')"
  for side in pure compiled; do
    dir="$root"; [ "$side" = compiled ] && dir="$work"
    printf '%-9s' "$side"
    (cd "$dir" && PYTHONPATH="$dir" "$python_bin" bench/bench_gym.py --tasks task5 --steps 5000 | grep '| task5')
    printf '%-9s' "$side"
    (cd "$dir" && PYTHONPATH="$dir" "$python_bin" bench/bench_gym.py --parts task5 --steps 3000)
  done
done
