#!/bin/sh
# Installs the Debian packages whisper-stem needs, where they are missing.
#   scripts/install-deps.sh          build and run
#   scripts/install-deps.sh --test   also the test framework, ffmpeg and sox (the audio
#                                    tests decode what they write to pipes), clang with
#                                    its runtime libraries (make fuzz: libFuzzer,
#                                    ASan, UBSan), node/npm for the GGUF interop
#                                    check when node is missing, and GNU parallel,
#                                    slurm-wlm and munge (make corpus runs the recipes
#                                    on a one-node Slurm cluster)
# Runs apt-get through sudo when not root. Debian 12 (bookworm) or later.
set -eu

PKGS="gcc make pkg-config libsndfile1-dev libfftw3-dev libsoxr-dev libcjson-dev"
# zlib: --list reads gzip-compressed lists (lhotse cut sets, .jsonl.gz)
PKGS="$PKGS zlib1g-dev"
# FFmpeg's headers: src/audio/libav.c is built with them and opens the libraries at run
# time (AAC/MP4, WebM, WMA, ... and --decode openai); without them the build still works
# and such inputs fail with a line that says why
PKGS="$PKGS libavformat-dev libavcodec-dev libavutil-dev libswresample-dev"
if [ "${1:-}" = "--test" ]; then
    # python3-torch: the .pt converter check (tests/interop/pt.sh), bench/run-cpu.sh and
    # make test-python (openai's log_mel_spectrogram in torch, beside the module's);
    # python3-soundfile: the PyTorch pipeline of bench/run-cmd-cpu.sh decodes with it
    PKGS="$PKGS libcriterion-dev python3-torch python3-numpy python3-soundfile"
    # make test-python installs python/ offline into a venv (--system-site-packages
    # --no-build-isolation): python3-venv makes it, python3-wheel lets setuptools 66
    # build the wheel pip installs
    PKGS="$PKGS python3-venv python3-wheel"
    # make wheel (make test-wheel in make check): scripts/bundle.sh sets the RUNPATH of
    # the libraries the wheel carries with patchelf
    PKGS="$PKGS patchelf xz-utils"
    # tests/test_audio.c runs both to make the files they write to a pipe; sox pulls
    # in libsox-fmt-base (w64, flac) and reads and writes WAV and AIFF itself
    PKGS="$PKGS ffmpeg sox"
    # make fuzz / fuzz-smoke: clang links -fsanitize=fuzzer,address,undefined only
    # with its runtime archives (libclang_rt.fuzzer, .asan, .ubsan_standalone), which
    # Debian ships apart from clang: libclang-rt-dev is the one for the default clang
    # (clang-14 and libclang-rt-14-dev on Debian 12)
    PKGS="$PKGS clang libclang-rt-dev"
    # make corpus (tests/corpus/): GNU parallel for parallel.sh; slurm-wlm (slurmctld,
    # slurmd, sbatch) and munge (Slurm's authentication) for slurm.sh, which starts
    # its own one-node cluster from a temporary directory and stops it after
    PKGS="$PKGS parallel slurm-wlm munge"
    # the GGUF interop check runs an npm package; any node >= 18 with npm will do
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        PKGS="$PKGS nodejs npm"
    fi
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "install-deps: installing$missing"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
