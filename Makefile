# mpi-build: the two commands.
#   make demo   the demo job: 4 ranks under mpirun build one OpenCL kernel collectively
#   make test   every test: unit tests, then the mpirun-launched integration tests
# Both provision a fresh Debian machine first (scripts/provision: Open MPI, mpi.jar, OpenCL loader, PoCL).

MVN ?= mvn -B -Dstyle.color=never
NP ?= 4
comma := ,
# The container tests (DockerIT) use the engine that scripts/container-engine set up, if it did; without
# one they skip, saying why.
ENGINE_SOCK := /run/mpi-build-podman/podman.sock
ifneq ($(wildcard $(ENGINE_SOCK)),)
export DOCKER_HOST ?= unix://$(ENGINE_SOCK)
export TESTCONTAINERS_RYUK_DISABLED ?= true
export MPI_BUILD_BASE_IMAGE ?= localhost/mpi-build-base:bookworm
endif
# The benchmarks' own class path (programs, chart, JSON), never the distribution's.
BENCH_CP = benchmarks/target/mpi-build-benchmarks.jar:benchmarks/target/lib/*

.PHONY: all provision build image demo test bench bench-main bench-main-trixie bench-publish bench-generic bench-fresh matrix-publish scale-model bench-batch bench-stream bench-allreduce bench-cg bench-ffm bench-ffm-abi bench-signing bench-full clean help gpu-bundle gpu-check release dist

all: build ## the same as make build

# make help prints every target by group, with the line after its ##.
HELP_GROUPS = The_two_commands demo test;Build provision build all clean help;Benchmarks bench bench-main bench-main-trixie bench-fresh bench-generic bench-batch bench-stream bench-allreduce bench-cg bench-signing bench-ffm bench-ffm-abi bench-full scale-model;Publish_figures_into_docs/ bench-publish matrix-publish;Ship dist release image gpu-bundle gpu-check

help: ## this list
	@awk -F':.*## ' '/^[a-z][a-z-]*:.*## / { d[$$1] = $$2 } END { \
	  n = split("$(HELP_GROUPS)", g, ";"); for (i = 1; i <= n; i++) { m = split(g[i], t, " "); \
	    title = t[1]; gsub(/_/, " ", title); printf "%s:\n", title; \
	    for (j = 2; j <= m; j++) printf "  make %-15s %s\n", t[j], d[t[j]] } }' $(firstword $(MAKEFILE_LIST))

provision: ## install what a fresh Debian machine needs (Open MPI, mpi.jar, PoCL); elsewhere, check for it
	@scripts/provision

build: provision ## provision, then build and install every module without tests
	$(MVN) -q -DskipTests install

demo: build ## the demo job: NP ranks (4) under mpirun build one kernel collectively
	bin/mpi-build demo -np $(NP)

test: provision ## every test: unit tests, then the mpirun-launched and container integration tests
	$(MVN) install

# The benchmarks: the batch build, stream-ordered messages, the FFM binding, signed cache entries, the cost of
# generic code, then the main comparison, whose bench: line (with its goals) ends the output: every strategy
# side by side at N = 1, 2, 4, 8, 16 ranks, 7 repetitions or more (each job's a multiple of its strategies) after a warm-up, each
# phase of every rank timed, and the broadcast at 4 and 2 ranks. Writes benchmarks/target/bench/{results.md,
# time-to-ready.png,phases.png,results.json,generic.md,generic.json} and the others' files; docs/benchmarks.md
# says what they hold. BENCH_ARGS narrows the main comparison, for example BENCH_ARGS="ranks=1,2,4 reps=7".
bench: build ## every benchmark, then the main comparison, whose bench: line judges the goals
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . batch
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . stream
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . allreduce
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . cg
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . ffm
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . signing
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . generic
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . fresh $(FRESH_ARGS)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . quick $(BENCH_ARGS)

# Jobs as their users run them: new processes for naive and for mpi-build, 8 pairs, at 1 rank (one JVM) and at 2
# (bin/mpi-build run) (about 4 minutes). FRESH_ARGS narrows it, e.g. "ranks=2 reps=7".
bench-fresh: build ## jobs of 1 and 2 ranks, new processes each time: naive against mpi-build, job and ready times
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . fresh $(FRESH_ARGS)

# The main comparison alone.
bench-main: build ## the main comparison alone (BENCH_ARGS narrows it, e.g. "ranks=1,2,4 reps=7")
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . quick $(BENCH_ARGS)

# The main comparison on Debian 13's PoCL 6.0, where users of a current distribution are: the version matrix's
# trixie image (Open MPI 5 with mpi.jar, Java 25, PoCL 6.0), this build's jars mounted, N = 1 and 2 by default
# (BENCH_ARGS overrides, e.g. "ranks=1,2 reps=7"). Writes benchmarks/target/bench-trixie/, beside bookworm's.
bench-main-trixie: build ## the main comparison in the trixie image (PoCL 6.0), N = 1 and 2
	$(call bench-in-matrix-image,trixie,-e MPI_BUILD_BENCH_OUT=$(CURDIR)/benchmarks/target/bench-trixie,quick $(or $(BENCH_ARGS),ranks=1$(comma)2))

# What generic code costs: matmul4's kernels at N=512, specialized against generic code (paired, 8 jobs of
# each), and a receiver's load + first launch with the launch shapes named and without (2 ranks).
bench-generic: build ## what PoCL's generic code and unnamed launch shapes cost
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . generic

# Puts the last main comparison where the docs show it: docs/bench-results.json, docs/bench-time-to-ready.png,
# docs/bench-phases.png, docs/bench-generic.md (when bench-generic ran), the tables of docs/benchmarks.md and the
# README's bench: line (made again from that JSON; a test checks that they match).
bench-publish: ## put the last main comparison into docs/ and the README
	java -cp "$(BENCH_CP)" org.mpibuild.bench.Publish .

# Puts the version matrix of the last MatrixIT run (integration-tests/target/matrix/matrix.md) in docs/mpi.md,
# between its matrix markers.
matrix-publish: ## put the last MatrixIT run's version matrix into docs/mpi.md
	@test -s integration-tests/target/matrix/matrix.md || { echo "no matrix yet: run make test (MatrixIT)" >&2; exit 1; }
	awk -v src=integration-tests/target/matrix/matrix.md 'BEGIN { while ((getline l < src) > 0) t = t l "\n" } \
	  /<!-- matrix:end -->/ { printf "%s", t; skip = 0 } !skip { print } /<!-- matrix:begin -->/ { skip = 1 }' \
	  docs/mpi.md > docs/mpi.md.new && mv docs/mpi.md.new docs/mpi.md

# The cost model of docs/scale.md: its table (written into the page) and docs/scale-model.png.
scale-model: build ## the cost model of docs/scale.md (table and chart)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.ScaleModel docs

# The batch build: 32 cold kernels on 1 rank and on 2, five alternating repetitions (about 3 minutes).
bench-batch: build ## the batch build: 32 cold kernels on 1 rank and on 2 (about 3 minutes)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . batch

# Stream-ordered messages against the manual pattern: a 2-rank ping-pong of kernels, 7 repetitions of one job
# each (ordered, manual, manual, ordered or the mirror, each loop after 2000 quick and 5 ordinary warm-up rounds),
# about 6 minutes.
bench-stream: build ## stream-ordered messages against the manual pattern (about 6 minutes)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . stream

# Stream-ordered all-reduce against the manual pattern: kernel, all-reduce of 4 KiB to 16 MiB, kernel on 2
# ranks, 7 repetitions of one job each (each mode twice per size: ordered, manual, manual, ordered or the
# mirror), on the mpi.jar and the FFM binding (about 8 minutes). ALLREDUCE_ARGS narrows it,
# for example ALLREDUCE_ARGS="reps=3 sizes=200:4096,10:16777216" (ITERATIONS:BYTES per size).
bench-allreduce: build ## stream-ordered all-reduce against the manual pattern, 4 KiB to 16 MiB, both bindings (about 8 minutes)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . allreduce $(ALLREDUCE_ARGS)

# The conjugate gradient example (issue 43), ordered on the device's queue against manual, on the FFM binding: time
# and host CPU per iteration at 2 and 4 ranks on a small (64 x 64 per rank) and a large (512 x 512 per rank) grid,
# 7 repetitions of one job each (ordered, manual, manual, ordered or the mirror, alternating), then the time to the
# first iteration at 4 ranks, mpi-build's collective build against every rank compiling (7 pairs of cold jobs);
# about 10 minutes on 2 cores. Writes benchmarks/target/bench-cg/{results.md,results.json,cg.png}. CG_ARGS narrows or
# widens it, for example CG_ARGS="bindings=ffm,mpijava" (adds mpi.jar on Java 17) or CG_ARGS="first_reps=0".
bench-cg: build ## the CG example, ordered against manual, 2 and 4 ranks, and its first iteration (about 10 minutes)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . cg $(CG_ARGS)

# What signed cache entries cost a warm start: Ed25519 verify against the warm build itself (about 1 minute).
bench-signing: build ## what signed cache entries cost a warm start (about 1 minute)
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . signing

# The FFM binding's MPI_Bcast against C's, 1 to 64 MiB on 2 ranks (needs the JDK 25; about 2 minutes); then,
# in the version matrix's Debian sid image (Open MPI 6.0 and MPICH 5.0, the MPIs with the MPI 5.0 standard
# ABI), the binding with the standard ABI and with the implementation's tables against C on the same MPI:
# broadcasts of 1 to 64 MiB and an 8-byte ping-pong, 7 rotated repetitions (about 5 minutes).
bench-ffm: build ## the FFM binding's broadcast against C's, then bench-ffm-abi
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . ffm
	$(MAKE) bench-ffm-abi

# Podman's own CLI where there is one: a docker CLI attached through Podman's API service keeps that service
# busy (about one core here), which a benchmark on 2 cores cannot afford. --shm-size: MPI's shared-memory
# transport needs more than the engine's default 64 MB.
CONTAINER_CLI ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || echo docker)
bench-ffm-abi: ## the FFM binding on the MPI 5.0 standard ABI, in the matrix sid image
	$(call bench-in-matrix-image,sid,,ffm-abi)

# $(call bench-in-matrix-image,SUITE,ENGINE OPTIONS,BENCHREPORT ARGUMENTS): BenchReport in the version matrix's image
# of SUITE, with this checkout (its build) mounted at the same path, and no network.
bench-in-matrix-image = image=$$(scripts/matrix-image $(1)) && $(CONTAINER_CLI) run --rm --network none \
  --shm-size=1g $(2) -v "$(CURDIR):$(CURDIR)" -w "$(CURDIR)" "$$image" java -cp "$(BENCH_CP)" \
  org.mpibuild.bench.BenchReport . $(3)

bench-full: build ## the main comparison with every strategy and size
	java -cp "$(BENCH_CP)" org.mpibuild.bench.BenchReport . full $(BENCH_ARGS)

# The runtime image (docker/Dockerfile) from this build: a JRE, Open MPI, PoCL and the jars; no Maven inside.
# Uses DOCKER_HOST if set (scripts/container-engine serves Podman's Docker API on machines without Docker)
# and the local base image that script builds where no registry is reachable.
image: build ## the runtime container image (docker/Dockerfile) from this build
	scripts/image-context build/image
	base=$${MPI_BUILD_BASE_IMAGE:-debian:12-slim}; docker build --build-arg BASE=$${base%:*} \
	  --build-arg BASE_TAG=$${base##*:} -t mpi-build:latest build/image

# A bundle for a GPU machine without Java or MPI (scripts/gpu-bundle, which GpuBundleIT also runs): a jlink
# runtime of the FFM binding's JDK 22+, the jars, MPICH from this machine's Debian packages with its launcher
# (mpi/bin/mpiexec), and scripts/gpu-check.
gpu-bundle: build ## a bundle for a GPU machine without Java or MPI: jlink runtime, jars, MPICH, gpu-check
	scripts/gpu-bundle build/gpu-bundle

# Runs the GPU checks here (they skip, saying why, without a GPU).
gpu-check: build ## the GPU checks here (they skip, saying why, without a GPU)
	scripts/gpu-check

# The release tarball, target/mpi-build-VERSION.tar.gz: bin/, lib/, docs and modulefiles; it runs unpacked
# anywhere, without root and without Maven (scripts/dist).
dist: build ## the release tarball target/mpi-build-VERSION.tar.gz (bin/, lib/, docs, modulefiles)
	scripts/dist

# A release for Maven Central, staged in target/staging (scripts/release; MPI_BUILD_GPG_KEY signs it).
release: provision ## a release for Maven Central, staged in target/staging
	scripts/release

clean: ## remove every build output
	$(MVN) -q clean
	rm -rf build
