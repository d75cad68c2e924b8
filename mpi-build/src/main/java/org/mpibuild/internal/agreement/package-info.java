/**
 * What every rank must agree on before it goes on: the same request ({@link RequestAgreement}, by the
 * fingerprint of each rank's request), the same settings that shape the protocol, and one verdict on failure
 * ({@link Verdict}), with each rank's failure as it travels ({@link RankFailure}).
 */
package org.mpibuild.internal.agreement;
