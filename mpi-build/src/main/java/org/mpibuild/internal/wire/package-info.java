/**
 * The wire format: a binary with its metadata and checksums ({@link Envelope}, {@link Payload}) and its
 * header-first, chunked broadcast ({@link EnvelopeBroadcast}).
 */
package org.mpibuild.internal.wire;
