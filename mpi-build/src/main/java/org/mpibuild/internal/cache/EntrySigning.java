package org.mpibuild.internal.cache;

import org.mpibuild.spi.EssentialWarning;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.mpibuild.CorruptBinaryException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signatures on cache entries, so that a planted entry (a valid format, a correct checksum, another binary)
 * is never loaded. Each writer signs with an Ed25519 key of its own, created on first use in a private file;
 * a reader accepts an entry only when its signature verifies against a trusted key: the user's own, or one
 * listed in the trust file ({@value #TRUST_FILE}) that a shared cache's owner publishes in its directory.
 *
 * <p>A writer also seals the entry with HMAC-SHA256 under a secret of its key file. A reader that finds its
 * own public key in an entry checks that seal instead of the signature: only the holder of the secret can
 * make it, and it costs a keyed SHA-256 (about a millisecond) where a cold Ed25519 verification costs tens of
 * milliseconds, which a warm start would feel. Entries of other keys are checked by their signature.
 *
 * <pre>
 * signature trailer, after the envelope: 44 bytes  the signer's public key (X.509)
 *                                         64 bytes  Ed25519 signature of the entry header and the envelope
 *                                         32 bytes  HMAC-SHA256 of everything before it, under the signer's secret
 * </pre>
 */
public final class EntrySigning {
  private static final Logger log = LoggerFactory.getLogger(EntrySigning.class);
  static final String TRUST_FILE = "trusted-keys";
  static final int PUBLIC_KEY_BYTES = 44;
  static final int SIGNATURE_BYTES = 64;
  static final int MAC_BYTES = 32;
  static final int TRAILER_BYTES = PUBLIC_KEY_BYTES + SIGNATURE_BYTES + MAC_BYTES;
  private static final Set<PosixFilePermission> PRIVATE_FILE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");

  private final String privateKeyText;
  private PrivateKey privateKey;
  private final byte[] publicKey;
  private final byte[] secret;
  private final Set<String> trusted;

  private EntrySigning(String privateKeyText, byte[] publicKey, byte[] secret, Set<String> trusted) {
    this.privateKeyText = privateKeyText;
    this.publicKey = publicKey;
    this.secret = secret;
    this.trusted = trusted;
  }

  /**
   * The user's key from {@code keyFile} (created, private, on first use) and the keys trusted for entries of
   * {@code cacheDir}.
   *
   * @throws IllegalStateException if the key file exists but cannot be used (then nothing is signed or read)
   */
  public static EntrySigning open(Path keyFile, Path cacheDir) {
    try {
      String[] key = readOrCreate(keyFile);
      byte[] pub = Base64.getDecoder().decode(key[1]);
      byte[] secret = Base64.getDecoder().decode(key[2]);
      if (pub.length != PUBLIC_KEY_BYTES || secret.length != MAC_BYTES) {
        throw new IOException(keyFile + " holds keys of the wrong size");
      }
      Set<String> trusted = new HashSet<>();
      trusted.add(key[1]);
      trusted.addAll(trustFile(cacheDir));
      return new EntrySigning(key[0], pub, secret, trusted);
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalStateException("the cache signing key " + keyFile + " cannot be used (" + e
          + "); remove it to make a new one, or set MPI_BUILD_SIGNING_KEY", e);
    }
  }

  /** This user's public key, as the trust file lists keys (base64 of X.509). */
  String publicKey() {
    return Base64.getEncoder().encodeToString(publicKey);
  }

  /** The trailer for {@code signed} (entry header and envelope): the public key, the signature, the seal. */
  synchronized byte[] sign(byte[] signed, int offset, int length) {
    try {
      if (privateKey == null) { // decoded on first write only: a warm start never needs it
        privateKey = KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(
            Base64.getDecoder().decode(privateKeyText)));
      }
      Signature s = Signature.getInstance("Ed25519");
      s.initSign(privateKey);
      s.update(signed, offset, length);
      byte[] out = Arrays.copyOf(publicKey, TRAILER_BYTES);
      System.arraycopy(s.sign(), 0, out, PUBLIC_KEY_BYTES, SIGNATURE_BYTES);
      // The seal covers everything before it, the signature included, so that no byte of an entry of yours
      // can change unnoticed.
      MessageDigest inner = hmacInner(secret);
      inner.update(signed, offset, length);
      inner.update(out, 0, PUBLIC_KEY_BYTES + SIGNATURE_BYTES);
      System.arraycopy(hmacOuter(secret, inner.digest()), 0, out, PUBLIC_KEY_BYTES + SIGNATURE_BYTES, MAC_BYTES);
      return out;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("signing a cache entry failed: " + e, e);
    }
  }

  /**
   * Checks the trailer at the end of {@code entry}: signed by a trusted key, over everything before it.
   *
   * @throws UntrustedEntryException if the signer is not trusted or the signature does not verify
   */
  void verify(byte[] entry) {
    if (entry.length < TRAILER_BYTES) {
      throw new UntrustedEntryException("unsigned: no signature trailer");
    }
    int signedLength = entry.length - TRAILER_BYTES;
    byte[] pub = Arrays.copyOfRange(entry, signedLength, signedLength + PUBLIC_KEY_BYTES);
    if (MessageDigest.isEqual(pub, publicKey)) {
      byte[] seal = Arrays.copyOfRange(entry, entry.length - MAC_BYTES, entry.length);
      if (!MessageDigest.isEqual(seal, hmac(secret, entry, 0, entry.length - MAC_BYTES))) {
        throw new UntrustedEntryException("bad seal: it names your key but was not sealed with it");
      }
      return;
    }
    String id = Base64.getEncoder().encodeToString(pub);
    if (!trusted.contains(id)) {
      throw new UntrustedEntryException("signed by key " + id.substring(0, 16) + "..., which is not trusted here "
          + "(not yours, not in " + TRUST_FILE + ")");
    }
    try {
      Signature s = Signature.getInstance("Ed25519");
      s.initVerify(KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(pub)));
      s.update(entry, 0, signedLength);
      if (!s.verify(entry, signedLength + PUBLIC_KEY_BYTES, SIGNATURE_BYTES)) {
        throw new UntrustedEntryException("bad signature: the entry was changed after it was signed");
      }
    } catch (GeneralSecurityException e) {
      throw new UntrustedEntryException("bad signature: " + e.getMessage());
    }
  }

  /**
   * HMAC-SHA256 (RFC 2104) of {@code data[offset, offset + length)} under {@code key} (at most 64 bytes),
   * with {@link MessageDigest}, so that a warm start does not pay for initializing {@code javax.crypto}.
   */
  static byte[] hmac(byte[] key, byte[] data, int offset, int length) {
    MessageDigest inner = hmacInner(key);
    inner.update(data, offset, length);
    return hmacOuter(key, inner.digest());
  }

  /** SHA-256 started with the key XOR ipad: feed it the message, then pass its digest to {@link #hmacOuter}. */
  private static MessageDigest hmacInner(byte[] key) {
    if (key.length > 64) {
      throw new IllegalArgumentException("an HMAC key of " + key.length + " bytes; at most 64");
    }
    MessageDigest sha = org.mpibuild.internal.Payload.sha256Digest();
    sha.update(pad(key, 0x36));
    return sha;
  }

  private static byte[] hmacOuter(byte[] key, byte[] innerDigest) {
    MessageDigest sha = org.mpibuild.internal.Payload.sha256Digest();
    sha.update(pad(key, 0x5c));
    sha.update(innerDigest);
    return sha.digest();
  }

  private static byte[] pad(byte[] key, int with) {
    byte[] p = new byte[64];
    for (int i = 0; i < 64; i++) {
      p[i] = (byte) ((i < key.length ? key[i] : 0) ^ with);
    }
    return p;
  }

  /** An entry that is not loaded because no trusted key vouches for it; rebuilt, and reported by verify. */
  static final class UntrustedEntryException extends CorruptBinaryException {
    private static final long serialVersionUID = 1L;

    UntrustedEntryException(String message) {
      super("untrusted entry: " + message);
    }
  }

  /** Reads the key file (private, public), creating it privately, without a race, when absent. */
  private static String[] readOrCreate(Path keyFile) throws IOException, GeneralSecurityException {
    if (!Files.exists(keyFile, LinkOption.NOFOLLOW_LINKS)) {
      Path dir = keyFile.toAbsolutePath().getParent();
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
      KeyPair kp = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
      byte[] secret = new byte[MAC_BYTES];
      new java.security.SecureRandom().nextBytes(secret);
      String text = "private " + Base64.getEncoder().encodeToString(kp.getPrivate().getEncoded()) + "\npublic "
          + Base64.getEncoder().encodeToString(kp.getPublic().getEncoded()) + "\nseal "
          + Base64.getEncoder().encodeToString(secret) + "\n";
      Path tmp = Files.createTempFile(dir, ".signing-key.", ".tmp", PosixFilePermissions.asFileAttribute(PRIVATE_FILE));
      try {
        Files.writeString(tmp, text);
        Files.createLink(keyFile, tmp); // fails if another process made the key first: then that one is used
        log.info("created the cache signing key {}", keyFile);
      } catch (FileAlreadyExistsException e) {
        // another rank or job was first
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
    PosixFileAttributes a = Files.readAttributes(keyFile, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (!a.isRegularFile() || !a.owner().getName().equals(System.getProperty("user.name"))
        || !PRIVATE_FILE.containsAll(a.permissions())) {
      throw new IOException(keyFile + " must be a regular file of yours that only you can read (mode 600)");
    }
    String priv = null;
    String pub = null;
    String seal = null;
    for (String line : Files.readAllLines(keyFile, StandardCharsets.US_ASCII)) {
      if (line.startsWith("private ")) {
        priv = line.substring(8).trim();
      } else if (line.startsWith("public ")) {
        pub = line.substring(7).trim();
      } else if (line.startsWith("seal ")) {
        seal = line.substring(5).trim();
      }
    }
    if (priv == null || pub == null || seal == null) {
      throw new IOException(keyFile + " holds no complete key (private, public, seal)");
    }
    return new String[] {priv, pub, seal};
  }

  /**
   * The keys listed in the cache directory's trust file: one base64 key per line, {@code #} comments. The
   * file counts only if it is a regular file (not a link) owned by you or by the directory's owner, and
   * writable by nobody else: otherwise anyone who can write there could trust themselves.
   */
  static List<String> trustFile(Path cacheDir) throws IOException {
    Path f = cacheDir.resolve(TRUST_FILE);
    if (!Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
      return List.of();
    }
    PosixFileAttributes a = Files.readAttributes(f, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    String dirOwner = Files.readAttributes(cacheDir, PosixFileAttributes.class).owner().getName();
    String owner = a.owner().getName();
    boolean othersWrite = a.permissions().contains(PosixFilePermission.GROUP_WRITE)
        || a.permissions().contains(PosixFilePermission.OTHERS_WRITE);
    if (!a.isRegularFile() || othersWrite || !(owner.equals(dirOwner) || owner.equals(System.getProperty("user.name")))) {
      EssentialWarning.print("ignoring " + f + ": a trust file must be a regular file owned by the cache's owner ("
          + dirOwner + ") and writable by nobody else");
      return List.of();
    }
    return Files.readAllLines(f, StandardCharsets.US_ASCII).stream().map(l -> l.replaceAll("#.*", "").trim())
        .filter(l -> !l.isEmpty()).map(l -> l.split("\\s+")[0]).toList();
  }
}
