package org.mpibuild.internal.settings;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;
import org.mpibuild.internal.base.EssentialWarning;

/**
 * Misspelt settings: an {@code MPI_BUILD_*} environment variable or {@code mpibuild.*} system property that
 * names no setting is ignored by the library, so it is reported, with the nearest real name (by edit
 * distance over every registered setting). Names that are not settings on purpose are declared in
 * {@link CoreSettings#NOT_SETTINGS}, {@link CoreSettings#NOT_SETTING_PREFIXES} and
 * {@link CoreSettings#PLUGIN_SETTINGS}.
 */
public final class SettingNames {
  private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

  private SettingNames() {}

  /**
   * Returns one line per name in {@code source} that looks like a setting and is none, naming the nearest
   * setting: {@code MPI_BUILD_COLECTIVE_TIMEOUT is not a setting of mpi-build, so it is ignored; did you
   * mean MPI_BUILD_COLLECTIVE_TIMEOUT?}. Empty when every such name is a setting.
   */
  public static List<String> misspelt(SettingSource source) {
    List<String> suspects = new ArrayList<>();
    for (String name : source.namesLike("MPI_BUILD_", "mpibuild.")) {
      if (!CoreSettings.NOT_SETTINGS.contains(name) && !CoreSettings.PLUGIN_SETTINGS.contains(name)
          && CoreSettings.NOT_SETTING_PREFIXES.stream().noneMatch(name::startsWith) && !isCoreSetting(name)) {
        suspects.add(name);
      }
    }
    if (suspects.isEmpty()) {
      return List.of(); // the usual case, at every opening: no need to load the plug-ins' settings
    }
    Set<String> variables = new TreeSet<>();
    Set<String> properties = new TreeSet<>();
    for (Setting<?> s : SettingRegistry.all()) {
      variables.add(s.variable());
      if (s.property() != null) {
        properties.add(s.property());
      }
    }
    List<String> out = new ArrayList<>();
    for (String name : suspects) {
      boolean variable = name.startsWith("MPI_BUILD_");
      Set<String> known = variable ? variables : properties;
      if (!known.contains(name)) {
        out.add((variable ? "environment variable " : "system property ") + name + " is not a setting of mpi-build, "
            + "so it is ignored; did you mean " + nearest(name, known) + "? (every "
            + "setting: docs/configuration.md, or bin/mpi-build doctor)");
      }
    }
    return out;
  }

  private static boolean isCoreSetting(String name) {
    for (Setting<?> s : CoreSettings.ALL) {
      if (name.equals(s.variable()) || name.equals(s.property())) {
        return true;
      }
    }
    return false;
  }

  /** Prints each misspelt name of {@code source} once per JVM, on stderr even without an SLF4J provider. */
  public static void warnOnce(SettingSource source) {
    for (String line : misspelt(source)) {
      if (REPORTED.add(line)) {
        EssentialWarning.print(line);
      }
    }
  }

  /** The name in {@code names} nearest to {@code name} (Levenshtein distance; the first of equals). */
  static String nearest(String name, Collection<String> names) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String n : names) {
      int d = distance(name, n);
      if (d < bestDistance) {
        best = n;
        bestDistance = d;
      }
    }
    return best;
  }

  /** The Levenshtein distance: the fewest insertions, deletions and substitutions from {@code a} to {@code b}. */
  static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int substitute = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(substitute, Math.min(prev[j] + 1, cur[j - 1] + 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }
}
