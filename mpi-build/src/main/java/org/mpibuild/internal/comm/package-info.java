/**
 * Communicator helpers: how a rank waits for MPI without spinning a core ({@link Backoff}), the first
 * collective of a call with a deadline that names absent ranks ({@link DeadlineAllReduce}), the local-mode
 * communicator ({@link LocalCommunicator}) and the rank in log lines ({@link LogContext}).
 */
package org.mpibuild.internal.comm;
