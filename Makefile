# The two commands a newcomer needs, after `scripts/install-deps.sh` has brought make itself
# and the rest (README, "Set up and run"):
#   make run    build the vtpu tool only, and run the main job on built-in defaults
#   make test   build everything (tests, RTL models, fuzzers, benchmarks) and run every test (what CI runs)
# Both first run scripts/install-deps.sh, which does nothing when everything is present.
JOBS ?= $(shell nproc)
PRESET ?= release
BUILD_DIR ?= build
VTPU := $(BUILD_DIR)/bin/vtpu

.PHONY: all deps configure build build-vtpu run test bench clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then cmake --preset $(PRESET) -B $(BUILD_DIR); fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# What the main job needs: the vtpu tool and the libraries it links, nothing else.
build-vtpu: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target vtpu

# The main job: TPU v1's MLP0 from the model zoo, int8 on the tpu-v1 preset, with the
# per-layer table and totals (the paper measured 12.3 TOPS on the real chip).
run: build-vtpu
	@mkdir -p $(BUILD_DIR)/run
	$(VTPU) run mlp0 -c tpu-v1 --dtype int8 --report $(BUILD_DIR)/run/report.json \
	  --csv $(BUILD_DIR)/run/layers.csv --trace $(BUILD_DIR)/run/trace.json --html $(BUILD_DIR)/run/report.html
	@echo "in $(BUILD_DIR)/run/: report.html (open in a browser), report.json, layers.csv, trace.json (open in ui.perfetto.dev)"

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf build build-debug build-asan
