# mpi-build: the two commands.
#   make demo   the demo job: 4 ranks under mpirun build one OpenCL kernel collectively
#   make test   every test: unit tests, then the mpirun-launched integration tests
# Both provision a fresh Debian machine first (scripts/provision: Open MPI, mpi.jar, OpenCL loader, PoCL).

MVN ?= mvn -B -Dstyle.color=never
NP ?= 4

.PHONY: all provision build demo test clean help

all: build

help:
	@sed -n '2,4p' Makefile | sed 's/^# *//'

provision:
	@scripts/provision

build: provision
	$(MVN) -q -DskipTests install

demo: build
	bin/mpi-build demo -np $(NP)

test: provision
	$(MVN) install

clean:
	$(MVN) -q clean
