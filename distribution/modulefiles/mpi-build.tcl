#%Module1.0
## mpi-build's modulefile for Environment Modules (Tcl). make dist installs it as
## share/modulefiles/mpi-build/VERSION in the release tarball; it finds the release relative to itself:
##   module use <release>/share/modulefiles && module load mpi-build
proc ModulesHelp { } {
  puts stderr "mpi-build: collective run-time kernel builds for MPI Java programs."
  puts stderr "Puts bin/mpi-build and bin/mpi-build-rank on the PATH and sets MPI_BUILD_HOME."
}
module-whatis "mpi-build: collective run-time kernel builds for MPI Java programs"
set root [file dirname [file dirname [file dirname [file dirname [file normalize $ModulesCurrentModulefile]]]]]
setenv MPI_BUILD_HOME $root
prepend-path PATH $root/bin
