# SPDX-License-Identifier: MIT
# A thin front for meson. `make sweep` and `make test` install what is missing first.
#   make sweep            default sweep on every local GPU under mpirun (host backends without a GPU)
#   make test             build and run the test suite (unit, mpi; gpu tests skip without a GPU)
#   make plots            render the committed results into plots/figures/
#   make deps             install dependencies only (DEBS=DIR installs from a folder of .debs)
#   make format           rewrite the files in .clang-format-files with clang-format (FILES=... for others)
#   make format-check     exit 1 when a file in .clang-format-files differs from its clang-format layout
BUILD ?= build
MESON_OPTS ?=
SWEEP_ARGS ?=
DEBS ?=
# The committed results that `make plots` renders (repeat and tuner runs are left out).
PLOT_RESULTS ?= results/h200x2-default.csv results/h200x2-rmsnorm.csv
# Runs under NCCL_P2P_DISABLE=1 share the hardware's fabric label: drawn apart.
PLOT_RESULTS_P2POFF ?= results/h200x2-p2poff.csv

# The files kept in .clang-format's layout (the rest of the tree predates it).
FILES ?= $(shell sed -e '/^\#/d' -e '/^$$/d' .clang-format-files)
CLANG_FORMAT ?= clang-format

.PHONY: all deps build test sweep plots format format-check clean

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
	@plots/render.sh $(BUILD) plots/figures $(PLOT_RESULTS)
	@plots/render.sh $(BUILD) plots/figures/nccl-p2p-disabled $(PLOT_RESULTS_P2POFF)

format:
	$(CLANG_FORMAT) -i $(FILES)

format-check:
	@$(CLANG_FORMAT) --dry-run --Werror $(FILES) && echo "format-check: $(words $(FILES)) files match .clang-format"

clean:
	rm -rf $(BUILD)
