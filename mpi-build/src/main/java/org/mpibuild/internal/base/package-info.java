/**
 * What every other internal package may use, and the exported helpers too: warnings a user must see without
 * an SLF4J provider ({@link org.mpibuild.internal.base.EssentialWarning}) and whether a file is this
 * process's own, by uid ({@link org.mpibuild.support.Ownership}).
 */
package org.mpibuild.internal.base;
