/**
 * The collective build: one request or a batch spread over roots ({@link CollectiveBuild}, {@link
 * BatchPlan}), how a root obtains a binary from the caches or the compiler ({@link BinarySource}, {@link
 * RootWorker}), how every rank loads it ({@link ProgramLoader}), asynchronous builds ({@link AsyncBuilds})
 * and the job's counters ({@link JobCounters}).
 */
package org.mpibuild.internal.protocol;
