package org.mpibuild.internal.protocol;

import org.mpibuild.BuildStats;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.LoadedProgram;

/**
 * What a successful build leaves on one rank ({@link CollectiveBuild#run}), or a load of binary data on this
 * rank alone ({@link ProgramLoader#loadOnThisRank}).
 */
public record Outcome(LoadedProgram program, Envelope envelope, BuildStats stats) {}
