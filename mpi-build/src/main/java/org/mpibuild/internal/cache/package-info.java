/**
 * The persistent kernel cache: its directory and tag, entries and their signatures, lock files and the
 * compile locks built on them, maintenance for the CLI, and the shared and node-local caches of a job.
 */
package org.mpibuild.internal.cache;
