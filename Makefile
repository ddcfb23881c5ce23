# The two commands a newcomer needs:
#   make run    install what is missing, build, and run the main job on built-in defaults
#   make test   install what is missing, build, and run every test (what CI runs)
JOBS ?= $(shell nproc)
PRESET ?= release
BUILD_DIR ?= build
VTPU := $(BUILD_DIR)/bin/vtpu

.PHONY: all deps configure build run test test-quick bench clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ]; then cmake --preset $(PRESET); fi

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: TPU v1's MLP0 from the model zoo, int8 on the tpu-v1 preset, with the
# per-layer table and totals (the paper measured 12.3 TOPS on the real chip).
run: build
	@mkdir -p $(BUILD_DIR)/run
	$(VTPU) run mlp0 -c tpu-v1 --dtype int8 --report $(BUILD_DIR)/run/report.json \
	  --csv $(BUILD_DIR)/run/layers.csv --trace $(BUILD_DIR)/run/trace.json
	@echo "report, per-layer CSV and timeline (open in ui.perfetto.dev) are in $(BUILD_DIR)/run/"

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf build build-debug build-asan
