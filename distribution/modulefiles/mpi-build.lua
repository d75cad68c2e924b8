-- mpi-build's modulefile for Lmod. make dist installs it as share/modulefiles/mpi-build/VERSION.lua in the
-- release tarball; it finds the release relative to itself, wherever the tarball was unpacked:
--   module use <release>/share/modulefiles && module load mpi-build
help([[mpi-build: collective run-time kernel builds for MPI Java programs.
Puts bin/mpi-build and bin/mpi-build-rank on the PATH and sets MPI_BUILD_HOME.
Load your MPI (and a Java 17+, or 22+ for the FFM binding) as well.]])
whatis("Name: mpi-build")
whatis("Description: collective run-time kernel builds for MPI Java programs")
local root = myFileName():match("^(.*)/share/modulefiles/[^/]+/[^/]+$")
setenv("MPI_BUILD_HOME", root)
prepend_path("PATH", pathJoin(root, "bin"))
