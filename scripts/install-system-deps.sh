#!/usr/bin/env bash
# Install the Debian packages that ptxasw's tool-chain tests use.
#
# Why: the end-to-end tests drive clang-19 (CUDA through --ptxas-path) and
# GCC's nvptx offloading (OpenACC/OpenMP to PTX through nvptx-tools' `as`).
# Neither ships with the CUDA toolkit. Each package is best-effort: a failure is
# reported on one line and the script goes on, so CI never fails here; the
# tests that need a missing compiler skip themselves with a clear reason.
#
# Idempotent: packages already installed are not fetched again, and
# `apt-get update` runs at most once per invocation (and only when something
# is missing).
set -u

# chromium: the HTML report's browser test drives it through Playwright (no browser
# download is possible here); that test fails, rather than skips, without it.
# pocl-opencl-icd (+ the ICD loader, headers, clinfo): the OpenCL reference of the
# PIRCH speed benchmark and its tests (benchmarks/pirch/ref_opencl).
# clang-tools-19 (clang-offload-packager, clang-linker-wrapper) and libomp-19-dev (the
# OpenMP device runtime): clang's OpenMP offload build, linked through a shadow toolkit.
# gfortran-12: Fortran OpenACC offloaded by GCC (gcc-12-offload-nvptx holds its libgfortran).
PACKAGES=(clang-19 clang-tools-19 libomp-19-dev gcc-12-offload-nvptx gfortran-12 chromium pocl-opencl-icd
    ocl-icd-opencl-dev opencl-headers clinfo)

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
else
    echo "install-system-deps: not root and no sudo; skipping ${PACKAGES[*]}" >&2
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: apt-get not found (not Debian/Ubuntu?); skipping ${PACKAGES[*]}" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
updated=0
for pkg in "${PACKAGES[@]}"; do
    if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        echo "install-system-deps: $pkg already installed"
        continue
    fi
    if [ "$updated" -eq 0 ]; then
        if ! "${SUDO[@]}" apt-get update -qq; then
            echo "install-system-deps: apt-get update failed; trying to install anyway" >&2
        fi
        updated=1
    fi
    start=$(date +%s)
    if "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; then
        echo "install-system-deps: installed $pkg in $(( $(date +%s) - start )) s"
    else
        echo "install-system-deps: could not install $pkg; the tests that need it will be skipped" >&2
    fi
done
exit 0
