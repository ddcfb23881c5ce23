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

# Until the compiler and model zoo land, the main job runs a hand-written conv layer on the
# cycle-accurate model of the default small chip and prints its report.
run: build
	@mkdir -p $(BUILD_DIR)/run
	$(VTPU) asm examples/conv3x3.s -o $(BUILD_DIR)/run/conv3x3.vtpu
	$(VTPU) sim $(BUILD_DIR)/run/conv3x3.vtpu --output-dir $(BUILD_DIR)/run \
	  --report $(BUILD_DIR)/run/report.json --trace $(BUILD_DIR)/run/trace.json
	@echo "outputs, report and timeline (open in ui.perfetto.dev) are in $(BUILD_DIR)/run/"

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf build build-debug build-asan
