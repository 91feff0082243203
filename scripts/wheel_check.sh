#!/usr/bin/env bash
# Installs the wheel scripts/wheel.sh made into a fresh venv beside the torch it pins, and runs it from
# outside the source tree: what a user who runs `pip install torch-opencl-...whl` gets.
#
#   bash scripts/wheel_check.sh [WHEEL]     (default: the newest dist/torch_opencl-*.whl)
#
# The venv lives in build/wheel-venv and is made anew each time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
wheel=${1:-$(ls -t dist/torch_opencl-*.whl 2>/dev/null | head -1)}
[ -n "$wheel" ] && [ -f "$wheel" ] || { echo "wheel_check.sh: no wheel; bash scripts/wheel.sh makes one" >&2; exit 1; }
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
torch_pin=$(.venv/bin/python -c "import torch; print(torch.__version__.split('+')[0])")
torch_minor=${torch_pin%.*}

venv=$ROOT/build/wheel-venv
rm -rf "$venv"
python3 -m venv "$venv"
PIP="$venv/bin/python -m pip --disable-pip-version-check -q"
echo "==> Installing torch==$torch_pin and $(basename "$wheel") into a fresh venv"
# torch first, spelled exactly, so pip never picks another build; the wheel's own pin must accept it.
$PIP install "torch==$torch_pin" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
$PIP install "$wheel" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
$venv/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_pin')" \
  || { echo "wheel_check.sh: installing the wheel changed torch" >&2; exit 1; }

# From an empty directory, so nothing of the checkout can be imported.
# torch warns once per process when numpy is absent; this venv has only what the wheel needs.
export PYTHONWARNINGS="ignore:Failed to initialize NumPy"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
PY=$venv/bin/python
$PY -m torch_opencl --help >/dev/null
report=$($PY -m torch_opencl)
sed -n '1,3p' <<<"$report"
grep -q "^torch_opencl: *[0-9.]*+torch$torch_minor$" <<<"$report" \
  || { echo "wheel_check.sh: the report does not name the wheel's torch (+torch$torch_minor)" >&2; exit 1; }
$PY - "$venv" "$torch_minor" <<'EOF'
import sys, torch                      # autoload: the torch.backends entry point loads torch_opencl
import torch_opencl

venv, torch_minor = sys.argv[1:3]
assert torch_opencl.__file__.startswith(venv), f"torch_opencl imported from {torch_opencl.__file__}, not the venv"
assert torch_opencl.__version__.endswith(f"+torch{torch_minor}"), f"torch_opencl.__version__ {torch_opencl.__version__}"
assert torch.opencl.is_available(), "no OpenCL device (python -m torch_opencl shows why)"
a = torch.randn(64, 48, device="opencl", requires_grad=True)
w = torch.randn(48, 32)
out = torch.nn.functional.gelu(a @ w.to("opencl")).sum(1)
out.sum().backward()
a_cpu = a.detach().cpu().requires_grad_()
ref = torch.nn.functional.gelu(a_cpu @ w).sum(1)
ref.sum().backward()
torch.testing.assert_close(out.cpu(), ref, rtol=1e-4, atol=1e-4)
torch.testing.assert_close(a.grad.cpu(), a_cpu.grad, rtol=1e-4, atol=1e-4)
# A matrix-vector product goes through CLBlast: the copy inside the wheel must be the one loaded.
v = torch.randn(48)
torch.testing.assert_close(torch.mv(w.t().contiguous().to("opencl"), v.to("opencl")).cpu(), w.t() @ v,
                           rtol=1e-4, atol=1e-4)
maps = open("/proc/self/maps").read().split("\n")
clblast = sorted({line.split()[-1] for line in maps if "libclblast" in line})
assert clblast and all("torch_opencl.libs" in path for path in clblast), f"CLBlast loaded from {clblast}"
print(f"wheel check: torch {torch.__version__}, torch_opencl from {torch_opencl.__file__}, "
      f"{torch.opencl.get_device_name()}, CLBlast from {clblast[0]}: ok")
EOF
