#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# scripts/deps.sh - install what a fresh Debian 12 machine lacks to build and
# test scalekit (make, make check), and with --peers what `make bench`
# compares against.
#
# Usage: scripts/deps.sh [--peers] [--check] [--help]
#
#   (no option)  install the missing build/test packages (root only)
#   --peers      also the benchmark peers: liburcu-dev, libck-dev, gnuplot-nox,
#                chromium (the bench page's browser test)
#   --check      only report what is missing; never installs, always exits 0
#
# Exit status: 0 when everything is present (or was installed, or --check),
# 1 when something is missing and cannot be installed (not root, no apt),
# 2 on a usage error.  The cross-architecture packages are optional: when
# they cannot be installed the status stays 0 and make check skips the
# aarch64 and -m32 jobs, saying why.
#
# Choices:
#  - gcc and g++ are required (CMake enables C and CXX; g++ compiles the
#    C++ header checks).  clang is not: nothing in the build or the tests
#    needs it; the header test uses it as an extra compiler when present.
#  - The sanitizer runtimes (libasan8, libubsan1, libtsan2) are dependencies
#    of libgcc-12-dev, which gcc-12 depends on, so installing gcc brings
#    them; they are still checked, because `make check` links with them.
#  - libc6-dev is only recommended by gcc, so it is listed explicitly.
#  - valgrind runs the leak checks of `make check` (tests/valgrind.cmake).
#  - spin checks the Promela models of tests/models/ (CTest model_*).
#  - python3 runs scripts/check_labels.py (CTest labels, tests/labels.cmake).
#  - ninja-build: the Makefile builds with Ninja when it is installed
#    (less CPU time than make for the six builds of make check), else
#    with make.
#  - Optional, for the cross-architecture jobs of `make check` (amd64
#    hosts only): gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu and
#    libc6-dev-arm64-cross build for aarch64, qemu-user runs the result
#    (qemu-aarch64; also qemu-i386 for the -m32 job on kernels without
#    32-bit support); gcc-N-multilib and g++-N-multilib (N: the major
#    version of gcc) build with -m32.  Not gcc-multilib: Debian makes it
#    conflict with every cross compiler, for the sake of one link,
#    /usr/include/asm, which cmake/toolchain-i686-m32.cmake replaces.
#    Installed with --no-remove: nothing already installed is removed
#    to make room for them.
#
# A package counts as present when its command is on PATH (a tool built
# from source is fine) or dpkg reports it installed.
set -euo pipefail

usage() {
	sed -n '4,16s/^# \{0,1\}//p' "$0"
}

want_peers=0
check_only=0
for arg in "$@"; do
	case $arg in
	--peers) want_peers=1 ;;
	--check) check_only=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		echo "deps.sh: unknown option '$arg'" >&2
		usage >&2
		exit 2
		;;
	esac
done

# Each requirement: "<debian package> <probe>", where the probe is
#   cmd:NAME  the command NAME is on PATH
#   lib:NAME  gcc finds the linker input NAME (and it is not a dangling link)
#   pkg       dpkg reports the package installed
required=(
	"cmake cmd:cmake"
	"make cmd:make"
	"gcc cmd:gcc"
	"g++ cmd:g++"
	"libc6-dev pkg"
	"binutils cmd:nm"
	"pkgconf cmd:pkg-config"
	"libasan8 lib:libasan.so"
	"libubsan1 lib:libubsan.so"
	"libtsan2 lib:libtsan.so"
	"valgrind cmd:valgrind"
	"spin cmd:spin"
	"python3 cmd:python3"
	"ninja-build cmd:ninja"
)
peers=(
	"liburcu-dev pkg"
	"libck-dev pkg"
	"gnuplot-nox cmd:gnuplot"
	"chromium cmd:chromium"
)

# Filled in below (the multilib names follow gcc's version).
cross=()

dpkg_installed() {
	local status
	# dpkg-query instead of `dpkg -s | grep`: a removed package whose
	# config files remain is known to dpkg -s but not installed.
	status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
	[ "$status" = "install ok installed" ]
}

present() {
	local pkg=$1 probe=$2 path
	case $probe in
	cmd:*)
		command -v "${probe#cmd:}" >/dev/null 2>&1 && return 0
		;;
	lib:*)
		if command -v gcc >/dev/null 2>&1; then
			path=$(gcc -print-file-name="${probe#lib:}" 2>/dev/null) || path=
			# gcc echoes the bare name back when it finds nothing.
			[ "$path" != "${probe#lib:}" ] && [ -e "$path" ] && return 0
		fi
		;;
	esac
	command -v dpkg-query >/dev/null 2>&1 && dpkg_installed "$pkg"
}

wanted=("${required[@]}")
what="build and test"
if [ "$want_peers" = 1 ]; then
	wanted+=("${peers[@]}")
	what="build, test and benchmark peers"
fi

# missing_of ENTRY...: the packages of the entries that are not present.
missing_of() {
	local entry pkg probe
	for entry in "$@"; do
		read -r pkg probe <<<"$entry"
		present "$pkg" "$probe" || echo "$pkg"
	done
}

# The optional cross-architecture packages (amd64 only): the aarch64 and
# -m32 jobs of make check skip themselves without them.
set_cross() {
	local major
	cross=()
	command -v dpkg >/dev/null 2>&1 || return 0
	[ "$(dpkg --print-architecture)" = amd64 ] || return 0
	cross=(
		"gcc-aarch64-linux-gnu cmd:aarch64-linux-gnu-gcc"
		"g++-aarch64-linux-gnu cmd:aarch64-linux-gnu-g++"
		"libc6-dev-arm64-cross pkg"
		"qemu-user cmd:qemu-aarch64"
	)
	major=$(gcc -dumpversion 2>/dev/null | cut -d. -f1) || major=
	if [ -n "$major" ]; then
		cross+=("gcc-$major-multilib pkg" "g++-$major-multilib pkg")
	fi
}

# install_entries KIND ENTRY...: apt-get install the packages of the
# entries that are missing, then probe every entry again (a package that
# installed but does not provide its probe, a renamed runtime say, is
# reported now, not as a link error later).  KIND "required": returns 1
# when something is still missing.  KIND "optional" (the cross packages):
# installed with --no-remove, and a failure is reported, never fatal.
install_entries() {
	local kind=$1 miss still flags=(-y -q --no-install-recommends)
	shift
	mapfile -t miss < <(missing_of "$@")
	[ "${#miss[@]}" -eq 0 ] && return 0
	[ "$kind" = optional ] && flags+=(--no-remove)
	echo "deps.sh: + apt-get install ${flags[*]} ${miss[*]}"
	if apt-get install "${flags[@]}" "${miss[@]}"; then
		mapfile -t still < <(missing_of "$@")
		if [ "${#still[@]}" -eq 0 ]; then
			echo "deps.sh: installed ${miss[*]}"
			return 0
		fi
		echo "deps.sh: still missing after install: ${still[*]}" >&2
	fi
	if [ "$kind" = optional ]; then
		echo "deps.sh: could not install ${miss[*]} (see above); make check skips the aarch64 and -m32 jobs that need them" >&2
		return 0
	fi
	echo "deps.sh: could not install ${miss[*]} (see above)" >&2
	return 1
}

# install_cross: try the optional packages; a failure is reported, not fatal.
install_cross() {
	set_cross
	install_entries optional "${cross[@]}"
}

# report_cross: say which optional packages are missing (never fatal).
report_cross() {
	local miss
	set_cross
	mapfile -t miss < <(missing_of "${cross[@]}")
	[ "${#miss[@]}" -eq 0 ] && return 0
	echo "deps.sh: optional, for the aarch64 and -m32 jobs of make check: ${miss[*]} missing (they are skipped); as root: scripts/deps.sh"
}

mapfile -t missing < <(missing_of "${wanted[@]}")

if [ "${#missing[@]}" -eq 0 ]; then
	echo "deps.sh: all present (${#wanted[@]} packages for $what)"
	if [ "$check_only" = 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		set_cross
		if [ -n "$(missing_of "${cross[@]}")" ]; then
			echo "deps.sh: + apt-get update"
			apt-get update -q
		fi
		install_cross
	else
		report_cross
	fi
	exit 0
fi

echo "deps.sh: missing for $what: ${missing[*]}"
if [ "$check_only" = 1 ]; then
	echo "deps.sh: --check: nothing installed; as root run: scripts/deps.sh$([ "$want_peers" = 1 ] && echo ' --peers')"
	report_cross
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: not root, cannot install; run as root (e.g. sudo scripts/deps.sh$([ "$want_peers" = 1 ] && echo ' --peers'))" >&2
	echo "deps.sh: or install by hand: apt-get install ${missing[*]}" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: apt-get not found (not Debian?); install by hand: ${missing[*]}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: + apt-get update"
apt-get update -q
install_entries required "${wanted[@]}" || exit 1
install_cross
