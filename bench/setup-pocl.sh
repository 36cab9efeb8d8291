#!/usr/bin/env bash
# Installs what `nacre bench gpu --backend cpu --peers` needs to time the PoCL peers
# (bench/peers/cpu_peers.py): Debian's PoCL (an OpenCL platform for the CPU), the OpenCL ICD
# loader, and PyOpenCL and NumPy for the Python that runs the script (python3, or $NACRE_PYTHON).
set -euo pipefail
if ! command -v clinfo >/dev/null || ! clinfo -l 2>/dev/null | grep -q "Portable Computing Language"; then
    apt-get update -qq
    apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 clinfo
fi
python=${NACRE_PYTHON:-python3}
"$python" -c 'import numpy, pyopencl' 2>/dev/null ||
    "$python" -m pip install --quiet --disable-pip-version-check numpy pyopencl
clinfo -l
"$python" -c 'import pyopencl as cl; print([d.name for p in cl.get_platforms() for d in p.get_devices()])'
