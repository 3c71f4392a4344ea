# SPDX-License-Identifier: MIT
# A thin front for meson. `make sweep` and `make test` install what is missing first.
#   make sweep            default sweep on every local GPU under mpirun (host backends without a GPU)
#   make test             build and run the test suite (unit, mpi; gpu tests skip without a GPU)
#   make plots            render the committed results into plots/
#   make deps             install dependencies only (DEBS=DIR installs from a folder of .debs)
BUILD ?= build
MESON_OPTS ?=
SWEEP_ARGS ?=
DEBS ?=

.PHONY: all deps build test sweep plots clean

all: build

deps:
	@ci/deps.sh $(if $(DEBS),--debs $(DEBS))

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

test: build
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

sweep: build
	@ci/sweep.sh $(BUILD) $(SWEEP_ARGS)

plots: build
	@plots/render.sh $(BUILD) plots results/*.csv

clean:
	rm -rf $(BUILD)
