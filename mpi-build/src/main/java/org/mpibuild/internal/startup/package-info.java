/**
 * Opening mpi-build on every rank ({@link Startup}): the MPI binding or local mode ({@link MpiBindings}),
 * the backend ({@link Backends}) and the job's targets ({@link JobTargets}).
 */
package org.mpibuild.internal.startup;
