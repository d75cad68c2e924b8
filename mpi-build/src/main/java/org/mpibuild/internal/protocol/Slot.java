package org.mpibuild.internal.protocol;

import org.mpibuild.KernelSource;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.LoadedProgram;

/**
 * One request as this rank goes through the call: who obtains it, what this rank obtained (as its owner)
 * or received, and how long each step took ({@link CollectiveBuild}).
 */
final class Slot {
  final int index;
  final KernelSource request;
  /** The owner's rank in the distribution communicator, and in the job. */
  final int owner;
  final int jobRoot;
  final boolean mine;
  BinarySource.Obtained obtained;
  /** Null if it arrived corrupt; {@link #problem} says why. */
  Envelope envelope;
  String problem;
  long waitNanos;
  long broadcastNanos;
  /** On the root of a shared compile: from its plan's broadcast to its result's (counted in the compile). */
  long shareNanos;
  /** On a rank that compiled a part of a shared compile: the bytes of the part it sent. */
  long partBytes;
  LoadedProgram program;
  long loadNanos;

  Slot(int index, KernelSource request, int owner, int jobRoot, boolean mine) {
    this.index = index;
    this.request = request;
    this.owner = owner;
    this.jobRoot = jobRoot;
    this.mine = mine;
  }

  boolean built() {
    return envelope != null && envelope.status() == Envelope.Status.OK;
  }

  boolean compiled() {
    return mine && obtained.compiled();
  }

  boolean cacheHit() {
    return mine && obtained.cacheHit();
  }
}
