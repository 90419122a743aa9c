# SPDX-License-Identifier: MIT
# Thin wrapper over CMake + CTest.  The two commands that matter:
#   make bench   the side-by-side benchmark (installs peers first when root)
#   make check   every test, then the ASan+UBSan and TSan builds
PREFIX  ?= /usr/local
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
WERROR  ?= ON
CMAKE   ?= cmake
CTEST   ?= ctest
CMAKE_FLAGS ?=
BENCH_ARGS ?=

SAN_ASAN := $(BUILD)-asan
SAN_TSAN := $(BUILD)-tsan

.PHONY: all build deps check check-main check-asan check-tsan bench install clean torture

all: build

# Configure once (or again when a flag changes) and build.
define configure
	@command -v $(CMAKE) >/dev/null 2>&1 || { echo "cmake not found: run scripts/deps.sh as root" >&2; exit 1; }
	$(CMAKE) -S . -B $(1) -DSK_WERROR=$(WERROR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(2) $(CMAKE_FLAGS) >/dev/null
	$(CMAKE) --build $(1) -j $(JOBS)
endef

build:
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)

deps:
	@if [ "$$(id -u)" = 0 ]; then scripts/deps.sh; else scripts/deps.sh --check; fi

check: deps check-main check-asan check-tsan
	@echo "make check: all test suites passed"

check-main: build
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS) -LE torture-long --timeout 600

check-asan:
	$(call configure,$(SAN_ASAN),-DCMAKE_BUILD_TYPE=Debug -DSK_SANITIZE=address$(,)undefined -DSK_DEBUG=1 -DSK_BUILD_TOOLS=ON)
	cd $(SAN_ASAN) && SK_TEST_SLOW=1 $(CTEST) --output-on-failure -j $(JOBS) -LE 'nosan|bench|torture-long' --timeout 900

check-tsan:
	$(call configure,$(SAN_TSAN),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DSK_SANITIZE=thread -DSK_DEBUG=1 -DSK_BUILD_TOOLS=ON)
	cd $(SAN_TSAN) && SK_TEST_SLOW=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		$(CTEST) --output-on-failure -j $(JOBS) -LE 'nosan|bench|torture-long' --timeout 900

bench:
	@if [ "$$(id -u)" = 0 ]; then scripts/deps.sh --peers; else echo "bench: not root, using the peers already installed"; fi
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@mkdir -p results
	$(BUILD)/tools/scalekit bench --csv results/bench.csv $(BENCH_ARGS)
	@scripts/plot.sh results/bench.csv results

torture: build
	cd $(BUILD) && SK_TORTURE_LONG=1 $(CTEST) --output-on-failure -L torture-long --timeout 7200

install: build
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(SAN_ASAN) $(SAN_TSAN)

, := ,
