# SPDX-License-Identifier: MIT
# Thin wrapper over CMake + CTest.  The two commands that matter:
#   make bench   the side-by-side benchmark (installs peers first when root)
#   make check   every test, then the ASan+UBSan and TSan builds, then the
#                unit tests built for aarch64 (run under qemu-user), for
#                32-bit x86 (-m32) and with the portable barriers
#                (SK_ARCH_GENERIC); see "Other CPUs" below
PREFIX  ?= /usr/local
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
WERROR  ?= ON
CMAKE   ?= cmake
CTEST   ?= ctest
CMAKE_FLAGS ?=
BENCH_ARGS ?=
# Tests ctest runs at once: as many as the CPUs.  Many tests wait rather
# than compute (forks, stall and timeout checks, qemu start-up), so one
# more (CTEST_JOBS=3 on 2 CPUs) shortens a quiet machine's run; it is not
# the default, since it was not yet shown free of timing failures on a
# loaded one.
CTEST_JOBS ?= $(JOBS)

# The sanitizer, cross and generic jobs build the C++ tests as C++17 only
# (tests/cpp.cmake, SK_CXX_STDS); check-main builds C++17 and C++20.
X_CXX    := -DSK_CXX_STDS=17

SAN_ASAN := $(BUILD)-asan
SAN_TSAN := $(BUILD)-tsan
X_A64    := $(BUILD)-aarch64
X_M32    := $(BUILD)-m32
X_GEN    := $(BUILD)-generic

.PHONY: all build deps check check-main check-asan check-tsan bench install clean torture \
	check-aarch64 check-m32 check-generic x-aarch64-run x-m32-run

all: build

# The build tool: Ninja when it is installed (scripts/deps.sh installs
# ninja-build), else CMake's default (make).  Ninja starts no make or
# cmake process per target and directory: the six builds of `make check`
# take less CPU time.  GENERATOR= keeps CMake's default; a build directory
# keeps the generator it was first configured with.
GENERATOR ?= $(if $(shell command -v ninja 2>/dev/null),Ninja)

# Configure once (or again when a flag changes) and build.
define configure
	@command -v $(CMAKE) >/dev/null 2>&1 || { echo "cmake not found: run scripts/deps.sh as root" >&2; exit 1; }
	$(CMAKE) -S . -B $(1) $(if $(GENERATOR),$$([ -f $(1)/CMakeCache.txt ] || echo '-G $(GENERATOR)')) -DSK_WERROR=$(WERROR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(2) $(CMAKE_FLAGS) >/dev/null
	$(CMAKE) --build $(1) -j $(JOBS)
endef

build:
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)

deps:
	@if [ "$$(id -u)" = 0 ]; then scripts/deps.sh; else scripts/deps.sh --check; fi

check: deps check-main check-asan check-tsan check-aarch64 check-m32 check-generic
	@echo "make check: all test suites passed"

check-main: build
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(CTEST_JOBS) -LE torture-long --timeout 600

check-asan:
	$(call configure,$(SAN_ASAN),-DCMAKE_BUILD_TYPE=Debug -DSK_SANITIZE=address$(,)undefined -DSK_DEBUG=1 -DSK_BUILD_TOOLS=ON $(X_CXX))
	cd $(SAN_ASAN) && SK_TEST_SLOW=1 $(CTEST) --output-on-failure -j $(CTEST_JOBS) -LE 'nosan|bench|torture-long' --timeout 900

check-tsan:
	$(call configure,$(SAN_TSAN),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSK_SANITIZE=thread -DSK_DEBUG=1 -DSK_BUILD_TOOLS=ON $(X_CXX))
	cd $(SAN_TSAN) && SK_TEST_SLOW=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		$(CTEST) --output-on-failure -j $(CTEST_JOBS) -LE 'nosan|bench|torture-long' --timeout 900

# ---- Other CPUs ---------------------------------------------------------------
# The library's architecture branches and the job of `make check` that compiles
# and runs each side (check-main, asan and tsan run the x86-64 sides):
#
#   include/scalekit/barrier.h (SK__BARRIER_ARCH_X86 / SK__BARRIER_ARCH_X86_64 / SK__BARRIER_ARCH_ARM64
#   are set from __x86_64__, __i386__ and __aarch64__ unless SK_ARCH_GENERIC)
#     sk_cpu_relax()            x86 pause:          check-main, check-m32
#                               aarch64 yield:      check-aarch64
#                               sk_barrier():       check-generic
#     sk_smp_mb()               TSan RMW:           check-tsan
#                               x86-64 locked add:  check-main, check-asan
#                               C11 seq_cst fence:  check-aarch64, check-m32,
#                                                   check-generic
#     sk_smp_mb__{before,after}_atomic()
#                               x86 compiler barrier: check-main, check-m32
#                               sk_smp_mb():        check-aarch64, check-generic
#     sk_barrier__fence_sys_get()       x86-64 asm GOT load: check-main, check-asan
#                               relaxed atomic load: check-aarch64, check-m32,
#                                                   check-generic, check-tsan
#   src/rcu_gp.c gp_fence_after_scan() (keyed on __x86_64__/__i386__ for now;
#   once on SK__BARRIER_ARCH_X86, check-generic runs its heavy-fence side as well)
#                               x86 (TSO) sk_smp_mb(): check-main, check-m32
#                               sk_fence_heavy():   check-aarch64
#   tests/test_barrier.c sb_expect_observed()
#                               x86 (must observe store buffering): check-main,
#                                                   check-m32, check-generic
#                               others (run only):  check-aarch64
#   The asymmetric fences' two modes (membarrier(2) or the fallback fence):
#   every job runs test_rcu, test_srcu_* and test_barrier both ways (the
#   *_no_membarrier tests); qemu-user passes membarrier(2) through to the
#   host kernel, so under it the default runs use membarrier too.
#
# check-aarch64 cross-compiles with gcc-aarch64-linux-gnu
# (cmake/toolchain-aarch64-linux-gnu.cmake) and runs the tests under
# qemu-aarch64; check-m32 builds with gcc -m32 (cmake/toolchain-i686-m32.cmake)
# and runs the tests natively, or under qemu-i386 where the kernel runs no
# 32-bit programs.  Under qemu: SK_TEST_SLOW=1 (fewer iterations, short
# torture runs) and no tests labelled noqemu; never the ones labelled nocross
# (tests/CMakeLists.txt says why for each), hostonly (tests that run no
# program built for the target: C++ compile-fail snippets, the .hpp
# self-containment check, the sources' label and layer checks; listed
# there too), bench or torture-long.  Each job
# prints "skipped: <reason>" and passes when its compiler or emulator is
# missing (scripts/deps.sh installs them as root).
A64_TRIPLE  := aarch64-linux-gnu
A64_SYSROOT := /usr/$(A64_TRIPLE)
X_CTEST     := $(CTEST) --output-on-failure -j $(CTEST_JOBS) --timeout 900
X_EXCLUDE   := nocross|hostonly|bench|torture-long

# $(call x_probe,DIR,COMPILE): shell test that COMPILE (a compiler command
# line, e.g. "gcc -m32") links an empty C program into DIR/probe.
x_probe = { mkdir -p $(1) && printf 'int main(void) { return 0; }\n' | \
	$(2) -x c - -o $(1)/probe >/dev/null 2>&1; }

check-aarch64:
	@if ! command -v $(A64_TRIPLE)-gcc >/dev/null 2>&1 || \
	    ! command -v $(A64_TRIPLE)-g++ >/dev/null 2>&1; then \
		echo "check-aarch64: skipped: $(A64_TRIPLE)-gcc or -g++ not found (as root, scripts/deps.sh installs gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"; \
	elif ! command -v qemu-aarch64 >/dev/null 2>&1; then \
		echo "check-aarch64: skipped: qemu-aarch64 not found (package qemu-user)"; \
	elif ! $(call x_probe,$(X_A64),$(A64_TRIPLE)-gcc); then \
		echo "check-aarch64: skipped: $(A64_TRIPLE)-gcc cannot link a program (package libc6-dev-arm64-cross missing?)"; \
	elif ! qemu-aarch64 -L $(A64_SYSROOT) $(X_A64)/probe; then \
		echo "check-aarch64: skipped: qemu-aarch64 cannot run an aarch64 program on this machine"; \
	else \
		$(MAKE) --no-print-directory x-aarch64-run; \
	fi

x-aarch64-run:
	$(call configure,$(X_A64),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-aarch64-linux-gnu.cmake $(X_CXX))
	cd $(X_A64) && SK_TEST_SLOW=1 $(X_CTEST) -LE '$(X_EXCLUDE)|noqemu'

# M32_EMU: empty (run natively) or the emulator x-m32-run runs the tests under.
# M32_QEMU=1: run them under qemu-i386 even where the kernel runs 32-bit
# programs (what a kernel without them sees; skipped if qemu-i386 cannot).
M32_QEMU ?=
check-m32:
	@if ! $(call x_probe,$(X_M32),gcc -m32) || ! $(call x_probe,$(X_M32),g++ -m32); then \
		echo "check-m32: skipped: gcc -m32 or g++ -m32 cannot link a program (as root, scripts/deps.sh installs gcc-$$(gcc -dumpversion 2>/dev/null | cut -d. -f1)-multilib g++-$$(gcc -dumpversion 2>/dev/null | cut -d. -f1)-multilib)"; \
	elif [ "$(M32_QEMU)" != 1 ] && $(X_M32)/probe 2>/dev/null; then \
		$(MAKE) --no-print-directory x-m32-run M32_EMU=; \
	elif command -v qemu-i386 >/dev/null 2>&1 && qemu-i386 $(X_M32)/probe; then \
		echo "check-m32: $(if $(filter 1,$(M32_QEMU)),M32_QEMU=1,this kernel runs no 32-bit x86 program): the tests run under qemu-i386"; \
		$(MAKE) --no-print-directory x-m32-run M32_EMU=$$(command -v qemu-i386); \
	else \
		echo "check-m32: skipped: $(if $(filter 1,$(M32_QEMU)),M32_QEMU=1 but qemu-i386 (package qemu-user) cannot run a 32-bit x86 program,this kernel runs no 32-bit x86 program and qemu-i386 (package qemu-user) cannot either)"; \
	fi

x-m32-run:
	$(call configure,$(X_M32),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-i686-m32.cmake -DCMAKE_CROSSCOMPILING_EMULATOR=$(M32_EMU) $(X_CXX))
	cd $(X_M32) && $(if $(M32_EMU),SK_TEST_SLOW=1 $(X_CTEST) -LE '$(X_EXCLUDE)|noqemu',$(X_CTEST) -LE '$(X_EXCLUDE)')

# The portable C11 barriers on this machine's CPU: the unit tests but the
# hostonly ones (the scalekit tool is not built: nothing here runs it), at the sanitizer
# jobs' length (SK_TEST_SLOW): check-main runs them at full length on the
# same CPU with the x86 barriers.  Not the liburcu layer's tests
# (SK_BUILD_URCU_TESTS=OFF): the layer has no code of its own per CPU or
# barrier kind (it calls scalekit's barriers), so here they would run the
# generic barriers that the unit tests run already (72 s of the job's
# 129 s of tests, in a fresh-clone CI run of 6cdf879).
check-generic:
	$(call configure,$(X_GEN),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSK_ARCH_GENERIC=ON -DSK_BUILD_TOOLS=OFF -DSK_CXX_CLANG=OFF -DSK_BUILD_URCU_TESTS=OFF $(X_CXX))
	cd $(X_GEN) && SK_TEST_SLOW=1 $(X_CTEST) -L unit -LE hostonly

bench:
	@if [ "$$(id -u)" = 0 ]; then scripts/deps.sh --peers; else echo "bench: not root, using the peers already installed"; fi
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@mkdir -p results
	$(BUILD)/tools/scalekit bench --csv results/bench.csv --json results/bench.json --html results/index.html $(BENCH_ARGS)
	@scripts/plot.sh results/bench.csv results

torture: build
	cd $(BUILD) && SK_TORTURE_LONG=1 $(CTEST) --output-on-failure -L torture-long --timeout 7200

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(SAN_ASAN) $(SAN_TSAN) $(X_A64) $(X_M32) $(X_GEN)

, := ,
