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

run: build
	@mkdir -p $(BUILD_DIR)/run
	$(VTPU) config check tpu-v1
	$(VTPU) asm examples/matmul_tiled.s -o $(BUILD_DIR)/run/matmul_tiled.vtpu
	$(VTPU) disasm $(BUILD_DIR)/run/matmul_tiled.vtpu

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/*; do [ -x "$$b" ] && "$$b"; done

clean:
	rm -rf build build-debug build-asan
